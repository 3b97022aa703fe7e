//! Approvers: whoever answers requests in process — a closure, a policy of the application's,
//! or a person at the terminal ([`TerminalApprover`]).
//!
//! An [`Approver`] is async; a [`SyncApprover`] blocks (it runs on tokio's blocking pool,
//! see [`blocking`]). Closures are both: `|request: Arc<PermissionRequest>| async { … }` is an
//! `Approver`, `|request: &PermissionRequest| …` a `SyncApprover`. Whatever an approver
//! returns, the broker checks it: an error or an answer that was not offered denies.

use std::fmt;
use std::io::{BufRead, Write};
use std::sync::{Arc, Mutex, PoisonError};

use async_trait::async_trait;
use toolgate_policy::Choice;

use crate::broker::{Answer, ContinuationAnswer, ContinuationRequest, PermissionRequest};
use crate::grants::ScopeKind;

/// Why an approver could not answer. The request is denied.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct ApproverError(pub String);

impl fmt::Display for ApproverError {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str(&self.0)
    }
}

impl std::error::Error for ApproverError {}

impl From<String> for ApproverError {
    fn from(message: String) -> ApproverError {
        ApproverError(message)
    }
}

impl From<&str> for ApproverError {
    fn from(message: &str) -> ApproverError {
        ApproverError(message.to_owned())
    }
}

fn no_continuation() -> ApproverError {
    ApproverError("this approver does not answer continuation requests".into())
}

/// Answers requests asynchronously.
#[async_trait]
pub trait Approver: Send + Sync + 'static {
    /// Answers a permission request.
    async fn approve(&self, request: Arc<PermissionRequest>) -> Result<Answer, ApproverError>;

    /// Answers a continuation request. By default: an error, which denies.
    async fn approve_continuation(
        &self,
        request: Arc<ContinuationRequest>,
    ) -> Result<ContinuationAnswer, ApproverError> {
        let _ = request;
        Err(no_continuation())
    }
}

#[async_trait]
impl<F, Fut> Approver for F
where
    F: Fn(Arc<PermissionRequest>) -> Fut + Send + Sync + 'static,
    Fut: Future<Output = Result<Answer, ApproverError>> + Send + 'static,
{
    async fn approve(&self, request: Arc<PermissionRequest>) -> Result<Answer, ApproverError> {
        self(request).await
    }
}

/// Answers requests synchronously (a terminal prompt, a dialog, a rule of the application's).
pub trait SyncApprover: Send + Sync + 'static {
    /// Answers a permission request.
    fn approve(&self, request: &PermissionRequest) -> Result<Answer, ApproverError>;

    /// Answers a continuation request. By default: an error, which denies.
    fn approve_continuation(
        &self,
        request: &ContinuationRequest,
    ) -> Result<ContinuationAnswer, ApproverError> {
        let _ = request;
        Err(no_continuation())
    }
}

impl<F> SyncApprover for F
where
    F: Fn(&PermissionRequest) -> Result<Answer, ApproverError> + Send + Sync + 'static,
{
    fn approve(&self, request: &PermissionRequest) -> Result<Answer, ApproverError> {
        self(request)
    }
}

/// Runs a [`SyncApprover`] on tokio's blocking pool.
pub fn blocking(approver: impl SyncApprover) -> Arc<dyn Approver> {
    Arc::new(Blocking(Arc::new(approver)))
}

struct Blocking<A>(Arc<A>);

#[async_trait]
impl<A: SyncApprover> Approver for Blocking<A> {
    async fn approve(&self, request: Arc<PermissionRequest>) -> Result<Answer, ApproverError> {
        let approver = Arc::clone(&self.0);
        tokio::task::spawn_blocking(move || approver.approve(&request))
            .await
            .map_err(|e| ApproverError(format!("the approver panicked or was cancelled: {e}")))?
    }

    async fn approve_continuation(
        &self,
        request: Arc<ContinuationRequest>,
    ) -> Result<ContinuationAnswer, ApproverError> {
        let approver = Arc::clone(&self.0);
        tokio::task::spawn_blocking(move || approver.approve_continuation(&request))
            .await
            .map_err(|e| ApproverError(format!("the approver panicked or was cancelled: {e}")))?
    }
}

/// How many times the terminal approver asks again after an answer it cannot read.
const TERMINAL_ATTEMPTS: usize = 5;

type Terminal = (Box<dyn BufRead + Send>, Box<dyn Write + Send>);

/// Asks a person at a terminal: shows the call, the reason, the rule and exactly what each
/// "always" answer would cover, then reads a line. One prompt at a time.
///
/// Answers: the number shown, the choice's name (`allow-once`, …), `y` (allow once) or `n`
/// (reject once). End of input is an error, which denies.
pub struct TerminalApprover {
    terminal: Mutex<Terminal>,
}

impl fmt::Debug for TerminalApprover {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.debug_struct("TerminalApprover").finish_non_exhaustive()
    }
}

impl TerminalApprover {
    /// Prompts on standard error and reads standard input.
    pub fn stdio() -> TerminalApprover {
        TerminalApprover::new(std::io::BufReader::new(std::io::stdin()), std::io::stderr())
    }

    /// Prompts on `output` and reads `input`.
    pub fn new(
        input: impl BufRead + Send + 'static,
        output: impl Write + Send + 'static,
    ) -> TerminalApprover {
        TerminalApprover {
            terminal: Mutex::new((Box::new(input), Box::new(output))),
        }
    }

    /// The prompt shown for a request. Every field is shown whole, with control and
    /// direction-changing characters escaped, so a model-chosen name or argument cannot draw
    /// fake lines on the terminal or hide part of what is approved.
    pub fn render(request: &PermissionRequest) -> String {
        let mut out = String::new();
        out.push_str("\n── toolgate: permission needed ──\n");
        out.push_str(&format!(
            "  tool    {}  (call {})\n",
            terminal_text(&request.tool),
            terminal_text(&request.call_id)
        ));
        out.push_str(&format!(
            "  args    {}\n",
            terminal_text(&request.arguments.to_string())
        ));
        out.push_str(&format!("  reason  {}\n", terminal_text(&request.reason)));
        match &request.rule {
            Some(rule) => out.push_str(&format!(
                "  rule    {} ({})\n",
                terminal_text(rule),
                request.layer
            )),
            None => out.push_str(&format!("  layer   {}\n", request.layer)),
        }
        for (n, choice) in request.choices.iter().enumerate() {
            out.push_str(&format!("  [{}] {}", n + 1, choice_label(*choice)));
            if let Some(targets) = request.covers(*choice) {
                let scope = request
                    .always
                    .iter()
                    .find(|a| a.choice == *choice)
                    .map_or(ScopeKind::Session, |a| a.scope);
                let what: Vec<String> = targets
                    .iter()
                    .map(|t| terminal_text(&t.to_string()))
                    .collect();
                out.push_str(&format!(
                    " — covers `{}` for {}, {}",
                    terminal_text(&request.tool),
                    what.join("; "),
                    scope_label(scope)
                ));
            }
            out.push('\n');
        }
        out.push_str(&format!("answer [1-{}]: ", request.choices.len()));
        out
    }

    fn exchange<T>(
        &self,
        prompt: &str,
        mut read: impl FnMut(&str) -> Option<T>,
    ) -> Result<T, ApproverError> {
        let mut terminal = self.terminal.lock().unwrap_or_else(PoisonError::into_inner);
        let (input, output) = &mut *terminal;
        for _ in 0..TERMINAL_ATTEMPTS {
            output
                .write_all(prompt.as_bytes())
                .and_then(|()| output.flush())
                .map_err(|e| ApproverError(format!("cannot write to the terminal: {e}")))?;
            let mut line = String::new();
            let n = input
                .read_line(&mut line)
                .map_err(|e| ApproverError(format!("cannot read the terminal: {e}")))?;
            if n == 0 {
                return Err("the terminal closed before answering".into());
            }
            if let Some(answer) = read(line.trim()) {
                return Ok(answer);
            }
            let _ = output.write_all(b"  (not an answer; try again)\n");
        }
        Err(ApproverError(format!(
            "no readable answer after {TERMINAL_ATTEMPTS} attempts"
        )))
    }
}

/// Text safe to print on a terminal: control characters, and characters that change the
/// direction or hide text, escaped as `\u{…}` (newlines and tabs as `\n`, `\t`). What an
/// agent wrote (a tool name, an argument, a reason) can then neither fake nor hide a line.
pub fn terminal_text(text: &str) -> String {
    let mut out = String::with_capacity(text.len());
    for c in text.chars() {
        match c {
            '\n' => out.push_str("\\n"),
            '\r' => out.push_str("\\r"),
            '\t' => out.push_str("\\t"),
            // Controls, bidirectional controls, Unicode's default-ignorable characters (soft
            // hyphen, joiners, variation selectors, tag characters that smuggle text), fillers
            // that look like spaces, line separators.
            c if c.is_control()
                || matches!(c, '\u{ad}' | '\u{34f}' | '\u{61c}' | '\u{115f}' | '\u{1160}'
                    | '\u{17b4}' | '\u{17b5}' | '\u{180b}'..='\u{180f}'
                    | '\u{200b}'..='\u{200f}' | '\u{2028}'..='\u{202e}'
                    | '\u{205f}'..='\u{206f}' | '\u{2800}' | '\u{3164}'
                    | '\u{fe00}'..='\u{fe0f}' | '\u{feff}' | '\u{ffa0}'
                    | '\u{fff0}'..='\u{fff8}' | '\u{1d173}'..='\u{1d17a}'
                    | '\u{e0000}'..='\u{e0fff}') =>
            {
                out.push_str(&format!("\\u{{{:x}}}", u32::from(c)));
            }
            c => out.push(c),
        }
    }
    out
}

fn choice_label(choice: Choice) -> &'static str {
    match choice {
        Choice::AllowOnce => "allow once",
        Choice::AllowAlways => "allow always",
        Choice::RejectOnce => "reject once",
        Choice::RejectAlways => "reject always",
    }
}

fn scope_label(scope: ScopeKind) -> String {
    scope.says(None)
}

/// Reads a terminal answer against the offered choices.
fn read_choice(text: &str, offered: &[Choice]) -> Option<Choice> {
    if let Ok(n) = text.parse::<usize>() {
        return n.checked_sub(1).and_then(|i| offered.get(i)).copied();
    }
    let choice = match text.to_ascii_lowercase().as_str() {
        "y" | "yes" => Choice::AllowOnce,
        "n" | "no" => Choice::RejectOnce,
        other => other.parse().ok()?,
    };
    offered.contains(&choice).then_some(choice)
}

impl SyncApprover for TerminalApprover {
    fn approve(&self, request: &PermissionRequest) -> Result<Answer, ApproverError> {
        let prompt = TerminalApprover::render(request);
        self.exchange(&prompt, |text| read_choice(text, &request.choices))
            .map(Answer::from)
    }

    fn approve_continuation(
        &self,
        request: &ContinuationRequest,
    ) -> Result<ContinuationAnswer, ApproverError> {
        let prompt = format!(
            "\n── toolgate: the agent reached its limit of {} iterations ──\n  \
             continue? [y] yes  [n] no  [N] N more iterations: ",
            request.max_iterations
        );
        self.exchange(&prompt, |text| match text.to_ascii_lowercase().as_str() {
            "y" | "yes" => Some(ContinuationAnswer {
                approved: true,
                extension: 0,
            }),
            "n" | "no" => Some(ContinuationAnswer {
                approved: false,
                extension: 0,
            }),
            n => n.parse::<u32>().ok().map(|extension| ContinuationAnswer {
                approved: extension > 0,
                extension,
            }),
        })
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn text_for_a_terminal_shows_what_would_hide_or_reorder() {
        for (text, shown) in [
            ("git push\nrm -rf ~", "git push\\nrm -rf ~"),
            ("a\u{202e}b", "a\\u{202e}b"),
            ("or\u{ad}igin", "or\\u{ad}igin"),
            ("main\u{e0072}\u{e006d}", "main\\u{e0072}\\u{e006d}"),
            ("a\u{2028}b", "a\\u{2028}b"),
            ("x\u{3164}y", "x\\u{3164}y"),
            ("main\u{fe0f}", "main\\u{fe0f}"),
            ("plain ünïcode 😀", "plain ünïcode 😀"),
        ] {
            assert_eq!(terminal_text(text), shown, "{text:?}");
        }
    }

    #[test]
    fn terminal_answers_are_read_against_the_offer() {
        let offered = [Choice::AllowOnce, Choice::RejectOnce];
        assert_eq!(read_choice("1", &offered), Some(Choice::AllowOnce));
        assert_eq!(read_choice("2", &offered), Some(Choice::RejectOnce));
        assert_eq!(read_choice("3", &offered), None);
        assert_eq!(read_choice("0", &offered), None);
        assert_eq!(read_choice("y", &offered), Some(Choice::AllowOnce));
        assert_eq!(read_choice("allow-always", &offered), None);
        assert_eq!(
            read_choice("reject-once", &offered),
            Some(Choice::RejectOnce)
        );
        assert_eq!(read_choice("maybe", &offered), None);
    }

    #[test]
    fn the_prompt_escapes_what_could_fake_or_hide_lines_and_cuts_nothing() {
        let long = "x".repeat(5000);
        let request = PermissionRequest {
            tool: "rm\x1b[8m".into(),
            call_id: "c1\n  [1] allow always".into(),
            arguments: serde_json::json!({"path": long, "note": "\u{202e}txt.exe"}),
            reason: "line\rover".into(),
            ..PermissionRequest::example("rm")
        };
        let prompt = TerminalApprover::render(&request);
        assert!(
            prompt.contains("tool    rm\\u{1b}[8m  (call c1\\n  [1] allow always)"),
            "{prompt}"
        );
        assert!(prompt.contains("reason  line\\rover"));
        assert!(prompt.contains("\\u{202e}txt.exe"));
        assert!(prompt.contains(&long), "the arguments are shown whole");
        assert_eq!(
            prompt.matches('\n').count(),
            10,
            "no line but the prompt's own"
        );
        assert!(!prompt.contains('\x1b') && !prompt.contains('\r') && !prompt.contains('\u{202e}'));
    }

    #[test]
    fn the_terminal_asks_again_then_fails_closed_at_end_of_input() {
        let approver = TerminalApprover::new(std::io::Cursor::new("what\n2\n"), Vec::new());
        let request = PermissionRequest::example("rm");
        assert_eq!(
            approver.approve(&request).map(|a| a.decision),
            Ok(Choice::AllowAlways)
        );
        let approver = TerminalApprover::new(std::io::Cursor::new(""), Vec::new());
        assert!(approver.approve(&request).is_err());
    }
}
