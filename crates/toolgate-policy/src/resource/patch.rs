//! The files a patch in Codex's format changes (`apply_patch`, used by Codex, Cline, Roo Code,
//! OpenHands and Copilot): `*** Add File: PATH`, `*** Delete File: PATH`, `*** Update File: PATH`
//! and `*** Move to: PATH`, between `*** Begin Patch` and `*** End Patch`.
//!
//! Source: openai/codex `codex-rs/apply-patch/src/parser.rs` and its Lark grammar
//! `tool_apply_patch.lark` (lines are trimmed; a heredoc around the patch is accepted).

/// What a patch does to one file.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub(crate) enum PatchOp {
    Add,
    Delete,
    Update,
    /// The new name of the file the `Update File` before it names (which goes away).
    MoveTo,
}

impl PatchOp {
    pub(crate) fn describe(self) -> &'static str {
        match self {
            PatchOp::Add => "adds",
            PatchOp::Delete => "deletes",
            PatchOp::Update => "updates",
            PatchOp::MoveTo => "moves a file to",
        }
    }
}

/// A patch read: the files it changes, and the text it adds.
#[derive(Clone, Debug, Default, PartialEq, Eq)]
pub(crate) struct Patch {
    pub(crate) files: Vec<(PatchOp, String)>,
    /// The lines it adds (`+` lines), joined: what it writes.
    pub(crate) added: String,
}

/// Reads a patch; `Err` says why the text is not one (no `*** Begin Patch`, a file header
/// without a path, no file at all).
pub(crate) fn read(text: &str) -> Result<Patch, String> {
    let mut lines = text
        .lines()
        .map(str::trim)
        .skip_while(|l| l.is_empty())
        .peekable();
    // A heredoc around the patch (`<<'EOF'` … `EOF`).
    if lines.peek().is_some_and(|l| l.starts_with("<<")) {
        lines.next();
    }
    if lines.next() != Some("*** Begin Patch") {
        return Err("the patch does not start with `*** Begin Patch`".into());
    }
    let mut patch = Patch::default();
    let mut ended = false;
    for line in lines {
        if line == "*** End Patch" {
            ended = true;
            break;
        }
        let header = [
            ("*** Add File:", PatchOp::Add),
            ("*** Delete File:", PatchOp::Delete),
            ("*** Update File:", PatchOp::Update),
            ("*** Move to:", PatchOp::MoveTo),
        ]
        .into_iter()
        .find_map(|(prefix, op)| line.strip_prefix(prefix).map(|rest| (op, rest.trim())));
        match header {
            Some((_, "")) => return Err(format!("`{line}` names no file")),
            Some((op, path)) => patch.files.push((op, path.to_owned())),
            None => {
                if let Some(added) = line.strip_prefix('+') {
                    patch.added.push_str(added);
                    patch.added.push('\n');
                }
            }
        }
    }
    if !ended {
        return Err("the patch does not end with `*** End Patch`".into());
    }
    if patch.files.is_empty() {
        return Err("the patch changes no file".into());
    }
    Ok(patch)
}

#[cfg(test)]
mod tests {
    #![allow(clippy::unwrap_used)]
    use super::*;

    #[test]
    fn a_patch_names_the_files_it_changes() {
        let p = read(
            "*** Begin Patch\n*** Add File: docs/a.md\n+# A\n*** Update File: src/x.py\n*** Move to: src/y.py\n@@\n-old\n+new\n*** Delete File: old.txt\n*** End Patch\n",
        )
        .unwrap();
        assert_eq!(
            p.files,
            vec![
                (PatchOp::Add, "docs/a.md".to_owned()),
                (PatchOp::Update, "src/x.py".to_owned()),
                (PatchOp::MoveTo, "src/y.py".to_owned()),
                (PatchOp::Delete, "old.txt".to_owned()),
            ]
        );
        assert_eq!(p.added, "# A\nnew\n");
        assert!(read("<<'EOF'\n*** Begin Patch\n*** Add File: a\n+x\n*** End Patch\nEOF").is_ok());
        assert!(read("*** Begin Patch\n*** Add File: \n*** End Patch").is_err());
        assert!(read("*** Begin Patch\n*** End Patch").is_err());
        assert!(read("*** Begin Patch\n*** Add File: a\n+x\n").is_err());
        assert!(read("diff --git a/x b/x").is_err());
    }
}
