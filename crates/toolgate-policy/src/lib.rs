//! toolgate's policy engine: one policy decides, for every tool call an agent wants to make,
//! whether it runs ([`Decision::Allow`]), waits for a human ([`Decision::Ask`]) or is refused
//! ([`Decision::Deny`]).
//!
//! Load a policy ([`Policy::from_toml`], [`Policy::load`]), evaluate calls
//! ([`Policy::evaluate`]), trace them ([`Policy::explain`]), check the policy
//! ([`Policy::lint`]). The policy language is documented in `docs/policy.md`.
//!
//! ```rust,standalone_crate
//! use toolgate_policy::{Call, Decision, Layer, Policy};
//!
//! let policy = Policy::from_toml("policy.toml", r#"
//!     version = 1
//!     mode = "approve-reads"
//!
//!     [[rule]]
//!     name = "small-payments"
//!     decision = "allow"
//!     tool = "pay"
//!     args = { "/amount" = { lt = 100 }, "/currency" = { one_of = ["EUR", "USD"] } }
//!     examples = { match = [{ tool = "pay", args = { amount = 5, currency = "EUR" } }],
//!                  not_match = [{ tool = "pay", args = { amount = 500, currency = "EUR" } }] }
//! "#)?;
//!
//! let call = Call::from_json(r#"{"tool": "pay", "args": {"amount": 20, "currency": "USD"}}"#)?;
//! let evaluation = policy.evaluate(&call);
//! assert_eq!(evaluation.decision, Decision::Allow);
//! assert_eq!(evaluation.rule_name(), Some("small-payments"));
//!
//! // No rule matches a large payment: approve-reads asks for anything that is not a read.
//! let call = Call::from_json(r#"{"tool": "pay", "args": {"amount": 2000, "currency": "USD"}}"#)?;
//! let evaluation = policy.evaluate(&call);
//! assert_eq!((evaluation.decision, evaluation.layer), (Decision::Ask, Layer::Default));
//! # Ok::<(), Box<dyn std::error::Error>>(())
//! ```

mod call;
mod confined;
mod decision;
mod diagnostic;
mod duration;
mod eval;
mod evaluation;
mod explain;
mod extract;
mod guard;
mod index;
mod lint;
mod load;
mod matcher;
mod places;
mod policy;
mod profile;
mod resolve;
mod resource;
mod rule;
mod shared;
mod subject;
mod suggest;
mod taint;

pub use call::{Call, CallError, CallErrorKind, Context, Tag};
pub use confined::{ConfinedDir, OpenMode};
pub use decision::{
    Access, AlwaysScope, Choice, Decision, GrantKind, Layer, Mode, Origin, UnknownVariant,
};
pub use diagnostic::{Diagnostic, LoadError, Location, Severity};
pub use evaluation::{AskDetails, Evaluation, PermissionOverride, RunOptions, SubjectOutcome};
pub use explain::{
    Explanation, FileTrace, ModeTrace, ProfileTrace, RuleTrace, SubjectTrace, Verdict,
};
pub use extract::too_broad;
pub use lint::LoggedCall;
pub use policy::{
    DEFAULT_APPROVAL_TIMEOUT, DEFAULT_POLICY, DEFAULT_POLICY_NAME, LoadOptions, Policy,
    PolicyBuilder, PolicyRole, PolicySource, RootSpec, Settings, discover_policy_files,
    own_folders, project_policy_path, user_policy_path,
};
pub use profile::ProfileInfo;
pub use resolve::{AskHandler, AskRequest, HANDLER_DENIED_REASON, NO_HANDLER_REASON, Resolution};
pub use resource::{path, shell, url};
pub use rule::{Builtin, PredicateFn, Rule, RuleBuilder, RuleInfo};
pub use shared::{FileStamps, SharedPolicy};
pub use subject::{CommandSubject, OutsidePlace, PathRole, PathSubject, Subject, UrlSubject};
pub use taint::{
    DEFAULT_UNTRUSTED_PATHS, MAX_REACHED, MAX_TAINT_SOURCES, Restriction, ResultEffect,
    SessionTaint, TaintKind, TaintSettings, TaintSource,
};
