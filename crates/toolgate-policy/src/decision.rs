//! The small vocabulary every layer shares: decisions, modes, origins, access kinds, layers and the
//! answers a human can give.
//!
//! Every enum here has one exact string form (the public contract of DESIGN §8); parsing is
//! case-sensitive and rejects anything else.

use std::fmt;

/// Defines a string-backed enum: `as_str`, `ALL`, `Display`, `FromStr` and serde in one place, so
/// the spelling of each variant is written exactly once.
macro_rules! string_enum {
    (
        $(#[$meta:meta])*
        $vis:vis enum $name:ident ($what:literal) {
            $( $(#[$vmeta:meta])* $variant:ident = $text:literal ),+ $(,)?
        }
    ) => {
        $(#[$meta])*
        #[derive(Clone, Copy, Debug, PartialEq, Eq, Hash)]
        $vis enum $name {
            $( $(#[$vmeta])* $variant ),+
        }

        impl $name {
            /// Every variant, in declaration order.
            pub const ALL: &'static [$name] = &[$($name::$variant),+];

            /// The exact string form.
            pub const fn as_str(self) -> &'static str {
                match self {
                    $($name::$variant => $text),+
                }
            }

            /// What this kind of value is called in error messages.
            pub const WHAT: &'static str = $what;
        }

        impl ::std::fmt::Display for $name {
            fn fmt(&self, f: &mut ::std::fmt::Formatter<'_>) -> ::std::fmt::Result {
                f.write_str(self.as_str())
            }
        }

        impl ::std::str::FromStr for $name {
            type Err = $crate::decision::UnknownVariant;

            fn from_str(s: &str) -> Result<Self, $crate::decision::UnknownVariant> {
                match s {
                    $($text => Ok($name::$variant),)+
                    _ => Err($crate::decision::UnknownVariant {
                        what: $what,
                        found: s.to_owned(),
                        expected: &[$($text),+],
                    }),
                }
            }
        }

        impl ::serde::Serialize for $name {
            fn serialize<S: ::serde::Serializer>(&self, serializer: S) -> Result<S::Ok, S::Error> {
                serializer.serialize_str(self.as_str())
            }
        }

        impl<'de> ::serde::Deserialize<'de> for $name {
            fn deserialize<D: ::serde::Deserializer<'de>>(deserializer: D) -> Result<Self, D::Error> {
                let text = <::std::borrow::Cow::<'de, str> as ::serde::Deserialize>::deserialize(deserializer)?;
                text.parse().map_err(<D::Error as ::serde::de::Error>::custom)
            }
        }
    };
}

pub(crate) use string_enum;

/// A string that names no variant of one of toolgate's enums.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct UnknownVariant {
    /// What kind of value was expected (`decision`, `mode`, …).
    pub what: &'static str,
    /// The string that was given.
    pub found: String,
    /// Every accepted spelling.
    pub expected: &'static [&'static str],
}

impl fmt::Display for UnknownVariant {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        write!(f, "unknown {} `{}`, expected ", self.what, self.found)?;
        write_alternatives(f, self.expected)
    }
}

impl std::error::Error for UnknownVariant {}

/// Writes `` `a`, `b` or `c` ``.
pub(crate) fn write_alternatives(f: &mut impl fmt::Write, items: &[&str]) -> fmt::Result {
    for (i, item) in items.iter().enumerate() {
        if i > 0 {
            f.write_str(if i + 1 == items.len() { " or " } else { ", " })?;
        }
        write!(f, "`{item}`")?;
    }
    Ok(())
}

string_enum! {
    /// What happens to a tool call. Ordered so the strictest wins by `max()`: deny > ask > allow.
    ///
    /// ```rust,standalone_crate
    /// use toolgate_policy::Decision;
    /// assert_eq!(Decision::Allow.max(Decision::Deny), Decision::Deny);
    /// assert_eq!("ask".parse::<Decision>()?, Decision::Ask);
    /// # Ok::<(), toolgate_policy::UnknownVariant>(())
    /// ```
    pub enum Decision ("decision") {
        /// The call runs.
        Allow = "allow",
        /// The call waits for a stored grant, a handler or a human.
        Ask = "ask",
        /// The call is refused.
        Deny = "deny",
    }
}

impl Decision {
    const fn rank(self) -> u8 {
        match self {
            Decision::Allow => 0,
            Decision::Ask => 1,
            Decision::Deny => 2,
        }
    }
}

impl PartialOrd for Decision {
    fn partial_cmp(&self, other: &Self) -> Option<std::cmp::Ordering> {
        Some(self.cmp(other))
    }
}

impl Ord for Decision {
    fn cmp(&self, other: &Self) -> std::cmp::Ordering {
        self.rank().cmp(&other.rank())
    }
}

string_enum! {
    /// The session-wide stance for calls no rule decides (AGH's modes).
    ///
    /// An empty string means [`Mode::ApproveReads`]; see [`Mode::parse`].
    pub enum Mode ("mode") {
        /// Nothing is allowed without a human: an allow becomes an ask.
        DenyAll = "deny-all",
        /// Reads are allowed, everything else asks.
        ApproveReads = "approve-reads",
        /// Everything no rule decides is allowed.
        ApproveAll = "approve-all",
    }
}

impl Mode {
    /// Parses a mode string: one of the three exact names, or `""`, which means approve-reads.
    ///
    /// ```rust,standalone_crate
    /// use toolgate_policy::Mode;
    /// assert_eq!(Mode::parse("")?, Mode::ApproveReads);
    /// assert!(Mode::parse("Approve-All").is_err());
    /// # Ok::<(), toolgate_policy::UnknownVariant>(())
    /// ```
    pub fn parse(text: &str) -> Result<Mode, UnknownVariant> {
        if text.is_empty() {
            Ok(Mode::ApproveReads)
        } else {
            text.parse()
        }
    }

    /// How strict the mode is; used when several policy files set one.
    pub(crate) const fn strictness(self) -> u8 {
        match self {
            Mode::ApproveAll => 0,
            Mode::ApproveReads => 1,
            Mode::DenyAll => 2,
        }
    }
}

string_enum! {
    /// Who started the turn a call belongs to. Network-originated turns are stricter.
    pub enum Origin ("origin") {
        /// A person at the keyboard.
        User = "user",
        /// A message that arrived over the network (a chat bot, a webhook, another agent).
        Network = "network",
        /// A scheduled or scripted run.
        Automation = "automation",
    }
}

string_enum! {
    /// The kind of access a tool makes, as declared by its profile.
    pub enum Access ("access") {
        /// Reads files or state.
        Read = "read",
        /// Writes files or state.
        Write = "write",
        /// Runs a program.
        Execute = "execute",
        /// Talks to the network.
        Network = "network",
    }
}

string_enum! {
    /// Which part of the evaluation produced a decision (DESIGN §4.2).
    pub enum Layer ("layer") {
        /// The call itself was malformed: no rule, handler or human was consulted.
        Validate = "validate",
        /// A resource guard (workspace confinement, protected paths, unanalysable commands).
        Guard = "guard",
        /// A policy rule.
        Rule = "rule",
        /// No rule matched: the fallback or the mode's default decided.
        Default = "default",
        /// The mode's ceiling (deny-all turns an allow into an ask).
        Mode = "mode",
        /// A stored grant.
        Grant = "grant",
        /// A run override (require or disable permission, full access).
        Override = "override",
        /// A handler or a human answered.
        Handler = "handler",
        /// Nobody answered in time.
        Timeout = "timeout",
        /// The policy allowed, but the session holds untrusted content and the call would send
        /// something out (`[taint]`): a person is asked.
        Taint = "taint",
        /// The requester stopped waiting and took the call back (a hook whose agent then asks
        /// its own person): nothing was decided here, and the call was not run on this answer.
        Withdrawn = "withdrawn",
    }
}

string_enum! {
    /// An answer a human can give to an ask (the AGH and ACP names).
    pub enum Choice ("choice") {
        /// Run this call.
        AllowOnce = "allow-once",
        /// Run this call and remember the approval for the grant's subject.
        AllowAlways = "allow-always",
        /// Refuse this call.
        RejectOnce = "reject-once",
        /// Refuse this call and remember the refusal for the grant's subject.
        RejectAlways = "reject-always",
    }
}

impl Choice {
    /// Whether this answer lets the call run.
    pub const fn allows(self) -> bool {
        match self {
            Choice::AllowOnce | Choice::AllowAlways => true,
            Choice::RejectOnce | Choice::RejectAlways => false,
        }
    }

    /// Whether this answer is remembered as a grant.
    pub const fn is_always(self) -> bool {
        match self {
            Choice::AllowAlways | Choice::RejectAlways => true,
            Choice::AllowOnce | Choice::RejectOnce => false,
        }
    }
}

string_enum! {
    /// Where an "always" answer's grants apply: the person picks one of those the policy
    /// offers (`scopes`), the first by default.
    pub enum AlwaysScope ("scope") {
        /// The session, all its branches.
        Session = "session",
        /// Every session working in the call's workspace.
        Workspace = "workspace",
        /// Every session of the user, in every workspace.
        User = "user",
    }
}

string_enum! {
    /// What an "always" answer covers.
    pub enum GrantKind ("grant") {
        /// The tool, whatever its arguments.
        Tool = "tool",
        /// The tool with this command prefix.
        Command = "command",
        /// The tool on paths matching a glob.
        Path = "path",
        /// The tool on this domain.
        Domain = "domain",
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn decision_order_is_deny_ask_allow() {
        let mut all = vec![Decision::Deny, Decision::Allow, Decision::Ask];
        all.sort();
        assert_eq!(all, [Decision::Allow, Decision::Ask, Decision::Deny]);
        assert_eq!(Decision::Ask.max(Decision::Allow), Decision::Ask);
    }

    #[test]
    fn strings_round_trip_and_are_case_sensitive() {
        for d in Decision::ALL {
            assert_eq!(d.as_str().parse::<Decision>().unwrap(), *d);
        }
        for m in Mode::ALL {
            assert_eq!(Mode::parse(m.as_str()).unwrap(), *m);
        }
        assert_eq!(
            "Allow".parse::<Decision>().unwrap_err().to_string(),
            "unknown decision `Allow`, expected `allow`, `ask` or `deny`"
        );
        assert!(Mode::parse("approve_all").is_err());
        assert_eq!(Mode::parse("").unwrap(), Mode::ApproveReads);
    }

    #[test]
    fn serde_uses_the_exact_strings() {
        assert_eq!(
            serde_json::to_string(&Choice::AllowAlways).unwrap(),
            "\"allow-always\""
        );
        let c: Choice = serde_json::from_str("\"reject-once\"").unwrap();
        assert_eq!(c, Choice::RejectOnce);
        assert!(serde_json::from_str::<Choice>("\"ALLOW-ONCE\"").is_err());
    }
}
