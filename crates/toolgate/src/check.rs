//! `toolgate check`: evaluate calls and print one result per call.

use std::io::{self, Write};

use clap::{Args, ValueEnum};
use serde_json::{Map, Value, json};
use toolgate_policy::{Call, CallError, Evaluation, Layer, LoadOptions, Policy, RunOptions};

use crate::args::{CallArgs, PolicyArgs, RunArgs};
use crate::lines::{self, Line};
use crate::{EXIT_OK, Failure};

const CHECK_HELP: &str = "\
Input: one call from --tool (with --args, --tag, --annotations, --context) or --call, otherwise
JSON Lines from INPUT or stdin, one call per line:

  {\"tool\": \"write_file\", \"args\": {\"path\": \"src/a.rs\"}, \"tags\": [\"file_system\"],
   \"annotations\": {\"readOnlyHint\": false}, \"context\": {\"session\": \"s1\", \"origin\": \"user\",
   \"workspace\": \"/abs/root\", \"cwd\": \"/abs/root/src\", \"mode\": \"approve-reads\",
   \"server\": \"fs\", \"trusted_server\": false}, \"id\": \"optional, echoed back\"}

Output (--format json): one JSON object per call, in input order:

  {\"decision\": \"allow\"|\"ask\"|\"deny\", \"reason\": \"…\", \"rule\": \"name\"|null,
   \"layer\": \"validate\"|\"guard\"|\"rule\"|\"default\"|\"mode\"|\"override\",
   \"source\": {\"file\": \"…\", \"line\": N}, \"mode\": \"…\", \"subjects\": [ … ],
   \"choices\": [ … ], \"timeout_ms\": N, \"grant\": \"tool\"}   (choices… only for ask)

A line that is not a call yields {\"error\": {\"kind\": \"invalid_json\"|\"invalid_call\", \"message\": \"…\"}}
and the batch goes on. A call whose args are not a JSON object is denied (layer validate) and also
carries {\"error\": {\"kind\": \"invalid_arguments\", …}}. Blank lines are skipped.

Exit codes: 0 when the batch was processed (whatever the decisions), 2 when a policy fails to
load or the input cannot be read (the error on stderr).";

/// Evaluate calls: one from flags, or JSON Lines from stdin (or INPUT).
#[derive(Debug, Args)]
#[command(after_help = CHECK_HELP)]
pub(crate) struct CheckArgs {
    #[command(flatten)]
    policy: PolicyArgs,
    #[command(flatten)]
    call: CallArgs,
    #[command(flatten)]
    run: RunArgs,
    /// Output format.
    #[arg(long, value_enum, default_value_t = Format::Json)]
    format: Format,
}

#[derive(Clone, Copy, Debug, PartialEq, Eq, ValueEnum)]
enum Format {
    /// One JSON object per line.
    Json,
    /// Two lines per call for people.
    Text,
}

pub(crate) fn run(args: &CheckArgs) -> Result<u8, Failure> {
    let policy = args.policy.load(LoadOptions::default())?;
    let run = args.run.options();
    let stdout = io::stdout();
    let mut out = stdout.lock();
    if let Some(call) = args.call.flag_call()? {
        let line = Line {
            number: 1,
            id: None,
            call: Ok(call),
        };
        write_result(&mut out, args.format, &policy, &run, line)?;
        return Ok(EXIT_OK);
    }
    let mut input = lines::open(args.call.input.as_deref())?;
    lines::for_each_call(&mut *input, |line| {
        write_result(&mut out, args.format, &policy, &run, line)
    })?;
    Ok(EXIT_OK)
}

fn write_result(
    out: &mut impl Write,
    format: Format,
    policy: &Policy,
    run: &RunOptions,
    line: Line,
) -> Result<(), Failure> {
    let result = line.call.map(|call| {
        let evaluation = policy.evaluate_with(&call, run);
        (call, evaluation)
    });
    match format {
        Format::Json => {
            let value = json_result(line.id, &result);
            serde_json::to_writer(&mut *out, &value).map_err(io::Error::from)?;
            out.write_all(b"\n")?;
        }
        Format::Text => write_text(out, line.number, line.id.as_ref(), &result)?,
    }
    out.flush()?;
    Ok(())
}

/// The JSON output line for one input line.
pub(crate) fn json_result(
    id: Option<Value>,
    result: &Result<(Call, Evaluation), CallError>,
) -> Value {
    let mut object = Map::new();
    if let Some(id) = id {
        object.insert("id".into(), id);
    }
    match result {
        Ok((call, evaluation)) => {
            object.insert("tool".into(), Value::String(call.tool.clone()));
            if let Ok(Value::Object(fields)) = serde_json::to_value(evaluation) {
                object.extend(fields);
            } else {
                object.insert("decision".into(), json!("deny"));
                object.insert("reason".into(), json!("the result could not be encoded"));
            }
        }
        Err(error) => {
            object.insert(
                "error".into(),
                json!({"kind": error.kind.as_str(), "message": error.message}),
            );
        }
    }
    Value::Object(object)
}

fn write_text(
    out: &mut impl Write,
    number: u64,
    id: Option<&Value>,
    result: &Result<(Call, Evaluation), CallError>,
) -> io::Result<()> {
    let label = match id {
        Some(Value::String(s)) => format!("[{s}] "),
        Some(other) => format!("[{other}] "),
        None => String::new(),
    };
    match result {
        Err(error) => writeln!(out, "error  {label}line {number}: {error}"),
        Ok((call, evaluation)) => {
            let args = serde_json::to_string(&call.args).unwrap_or_default();
            writeln!(
                out,
                "{:<6} {label}{} {}",
                evaluation.decision.as_str(),
                call.tool,
                fold(&args, 72)
            )?;
            let by = match (&evaluation.rule, evaluation.layer) {
                (Some(rule), Layer::Rule) => format!("rule {rule}"),
                (Some(guard), Layer::Guard) => format!("guard `{}`", guard.name),
                (Some(rule), layer) => format!("{layer}, after rule {rule}"),
                (None, layer) => layer.to_string(),
            };
            writeln!(out, "       {by}: {}", evaluation.reason)
        }
    }
}

/// Shortens long text to `max` characters with an ellipsis.
fn fold(text: &str, max: usize) -> String {
    if text.chars().count() <= max {
        return text.to_owned();
    }
    let mut short: String = text.chars().take(max.saturating_sub(1)).collect();
    short.push('…');
    short
}
