//! `toolgate test`: the policy's own examples, plus case files of calls and expected decisions.

use std::io::{self, Write};
use std::path::PathBuf;

use clap::Args;
use serde::Deserialize;
use serde_json::Value;
use toolgate_policy::{Call, Decision, Layer, LoadOptions, Policy, RunOptions};

use crate::args::{PolicyArgs, RunArgs};
use crate::lines;
use crate::{EXIT_FOUND, EXIT_OK, Failure};

const TEST_HELP: &str = "\
A cases file is JSON Lines, one case per line:

  {\"call\": {\"tool\": \"bash\", \"args\": {\"command\": \"ls\"}}, \"expect\": \"ask\"}
  {\"name\": \"secrets stay\", \"call\": {…}, \"expect\": {\"decision\": \"deny\", \"rule\": \"no-secrets\", \"layer\": \"rule\"}}

`expect` is a decision, or an object whose `rule` and `layer` are checked when present. Blank
lines and lines starting with `#` are skipped.

Exit codes: 0 every example and case holds, 1 any mismatch (reported), 2 the policy failed to load
or a cases file cannot be read.";

/// Run the policy's examples and case files (calls with their expected decisions).
#[derive(Debug, Args)]
#[command(after_help = TEST_HELP)]
pub(crate) struct TestArgs {
    #[command(flatten)]
    policy: PolicyArgs,
    /// A cases file (JSON Lines). Repeatable.
    #[arg(long = "cases", value_name = "FILE")]
    cases: Vec<PathBuf>,
    #[command(flatten)]
    run: RunArgs,
}

#[derive(Debug, Deserialize)]
#[serde(deny_unknown_fields)]
struct Case {
    #[serde(default)]
    name: Option<String>,
    call: Value,
    expect: Expect,
}

#[derive(Debug, Deserialize)]
#[serde(untagged)]
enum Expect {
    Decision(Decision),
    Detailed {
        decision: Decision,
        #[serde(default)]
        rule: Option<String>,
        #[serde(default)]
        layer: Option<Layer>,
    },
}

pub(crate) fn run(args: &TestArgs) -> Result<u8, Failure> {
    let policy = args.policy.load(LoadOptions {
        check_examples: false,
        ..LoadOptions::default()
    })?;
    let run = args.run.options();
    let stdout = io::stdout();
    let mut out = stdout.lock();
    let mut passed = 0usize;
    let mut failed = 0usize;

    let examples: usize = policy.rules().map(|r| r.examples_len()).sum();
    let failures = policy.example_failures();
    passed += examples - failures.len().min(examples);
    failed += failures.len();
    writeln!(
        out,
        "examples: {} passed, {} failed",
        examples - failures.len().min(examples),
        failures.len()
    )?;
    for failure in &failures {
        write!(out, "{}", indent(&failure.to_string()))?;
    }

    for path in &args.cases {
        let text = lines::read_to_string(path)?;
        let mut file_passed = 0usize;
        let mut problems = Vec::new();
        for (i, line) in text.lines().enumerate() {
            let trimmed = line.trim();
            if trimmed.is_empty() || trimmed.starts_with('#') {
                continue;
            }
            match run_case(&policy, &run, trimmed) {
                Ok(()) => file_passed += 1,
                Err(problem) => problems.push(format!("{}:{}: {problem}", path.display(), i + 1)),
            }
        }
        writeln!(
            out,
            "cases {}: {file_passed} passed, {} failed",
            path.display(),
            problems.len()
        )?;
        for problem in &problems {
            writeln!(out, "  FAIL {problem}")?;
        }
        passed += file_passed;
        failed += problems.len();
    }
    let verdict = if failed == 0 { "ok" } else { "FAILED" };
    writeln!(
        out,
        "test result: {verdict}. {passed} passed; {failed} failed"
    )?;
    Ok(if failed == 0 { EXIT_OK } else { EXIT_FOUND })
}

fn run_case(policy: &Policy, run: &RunOptions, line: &str) -> Result<(), String> {
    let case: Case = serde_json::from_str(line).map_err(|e| format!("not a case: {e}"))?;
    let label = case
        .name
        .as_deref()
        .map(|n| format!("({n}) "))
        .unwrap_or_default();
    let call = Call::from_value(case.call).map_err(|e| format!("{label}invalid call: {e}"))?;
    let evaluation = policy.evaluate_with(&call, run);
    let (decision, rule, layer) = match case.expect {
        Expect::Decision(d) => (d, None, None),
        Expect::Detailed {
            decision,
            rule,
            layer,
        } => (decision, rule, layer),
    };
    let mut wrong = Vec::new();
    if evaluation.decision != decision {
        wrong.push(format!("expected {decision}, got {}", evaluation.decision));
    }
    if let Some(rule) = rule
        && evaluation.rule_name() != Some(rule.as_str())
    {
        wrong.push(format!(
            "expected rule `{rule}`, got {}",
            evaluation
                .rule_name()
                .map_or("no rule".into(), |r| format!("`{r}`"))
        ));
    }
    if let Some(layer) = layer
        && evaluation.layer != layer
    {
        wrong.push(format!("expected layer {layer}, got {}", evaluation.layer));
    }
    if wrong.is_empty() {
        return Ok(());
    }
    Err(format!(
        "{label}tool `{}`: {} — {} ({}{})",
        call.tool,
        wrong.join("; "),
        evaluation.reason,
        evaluation.layer,
        evaluation
            .rule_name()
            .map(|r| format!(", rule `{r}`"))
            .unwrap_or_default()
    ))
}

fn indent(text: &str) -> String {
    text.lines().map(|l| format!("  {l}\n")).collect()
}
