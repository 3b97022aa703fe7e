//! The rule index: which rules can possibly match a call, found without scanning every rule.
//!
//! Each rule is filed under one key that every call it matches must have: its exact tool names,
//! its tool globs (one `GlobSet` for the file), or — for rules without a tool condition — its
//! tags. Rules with neither are always candidates. Candidates are then checked in file order, so
//! first-match-wins is exactly as in a linear scan; the property test in `tests/oracle.rs` holds
//! the two to the same answers.

use globset::{Candidate, GlobSet, GlobSetBuilder};
use rustc_hash::FxHashMap;

use crate::call::{Call, Tag};
use crate::matcher::{NamePattern, compile_glob};
use crate::rule::Rule;

#[derive(Debug)]
pub(crate) struct RuleIndex {
    exact: FxHashMap<Box<str>, Vec<u32>>,
    globs: GlobSet,
    /// The rule of each glob in `globs`.
    glob_rules: Vec<u32>,
    by_tag: FxHashMap<Tag, Vec<u32>>,
    /// Rules every call is a candidate for, in order.
    always: Vec<u32>,
    /// The first rule filed under anything but an exact tool name (`u32::MAX`: none).
    first_other: u32,
}

impl RuleIndex {
    pub(crate) fn build(rules: &[Rule]) -> RuleIndex {
        let mut exact: FxHashMap<Box<str>, Vec<u32>> = FxHashMap::default();
        let mut builder = GlobSetBuilder::new();
        let mut glob_rules = Vec::new();
        let mut by_tag: FxHashMap<Tag, Vec<u32>> = FxHashMap::default();
        let mut always = Vec::new();
        for (i, rule) in rules.iter().enumerate() {
            let Ok(i) = u32::try_from(i) else {
                break;
            };
            if let Some(patterns) = rule.tool_patterns() {
                let globs: Option<Vec<_>> = patterns
                    .iter()
                    .map(|p| match p {
                        NamePattern::Glob { text, .. } => compile_glob(text).ok().map(Some),
                        NamePattern::Exact(_) | NamePattern::Any => Some(None),
                    })
                    .collect();
                if let Some(globs) = globs {
                    for (pattern, glob) in patterns.iter().zip(globs) {
                        match (pattern, glob) {
                            (NamePattern::Exact(name), _) => {
                                let list = exact.entry(name.clone()).or_default();
                                if list.last() != Some(&i) {
                                    list.push(i);
                                }
                            }
                            (_, Some(glob)) => {
                                builder.add(glob);
                                glob_rules.push(i);
                            }
                            (_, None) => {}
                        }
                    }
                    continue;
                }
            } else if let Some(tags) = &rule.when.tags
                // A built-in tag rule also matches by what a call's profile says it does
                // (`ask_network` and `WebFetch`): a candidate for every call.
                && !(rule.info.builtin
                    && tags
                        .iter()
                        .any(|t| matches!(t, Tag::Network | Tag::FileSystem | Tag::ReadOnly)))
            {
                for tag in tags {
                    let list = by_tag.entry(tag.clone()).or_default();
                    if list.last() != Some(&i) {
                        list.push(i);
                    }
                }
                continue;
            }
            always.push(i);
        }
        let globs = match builder.build() {
            Ok(set) => set,
            Err(_) => {
                // Too large to compile as one set: those rules become plain candidates, which
                // is slower but exactly as correct.
                always.append(&mut glob_rules);
                always.sort_unstable();
                always.dedup();
                GlobSet::empty()
            }
        };
        let first_other = glob_rules
            .iter()
            .chain(&always)
            .chain(by_tag.values().filter_map(|list| list.first()))
            .copied()
            .min()
            .unwrap_or(u32::MAX);
        RuleIndex {
            exact,
            globs,
            glob_rules,
            by_tag,
            always,
            first_other,
        }
    }

    /// The first rule filed under the call's exact tool name, when it comes before every rule
    /// filed otherwise: the first candidate, found without gathering the others.
    pub(crate) fn first_by_name(&self, call: &Call) -> Option<u32> {
        let first = *self.exact.get(call.tool.as_str())?.first()?;
        (first < self.first_other).then_some(first)
    }

    /// The rules `call` can match, in file order, into `out` (cleared first).
    pub(crate) fn candidates(&self, call: &Call, out: &mut Vec<u32>, scratch: &mut Vec<usize>) {
        out.clear();
        if let Some(list) = self.exact.get(call.tool.as_str()) {
            out.extend_from_slice(list);
        }
        if !self.glob_rules.is_empty() {
            self.globs
                .matches_candidate_into(&Candidate::new(&call.tool), scratch);
            out.extend(scratch.iter().filter_map(|g| self.glob_rules.get(*g)));
        }
        if !self.by_tag.is_empty() {
            for tag in &call.tags {
                if let Some(list) = self.by_tag.get(tag) {
                    out.extend_from_slice(list);
                }
            }
        }
        out.extend_from_slice(&self.always);
        out.sort_unstable();
        out.dedup();
    }
}
