//! Exit statuses and user-facing errors.

/// How a run ended; `main` turns it into the process exit code.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum ExitStatus {
    /// 0: done, nothing to report at or above the failure threshold.
    Clean,
    /// 1: done, with findings.
    Findings,
    /// 2: the job could not be done (bad arguments, unreadable input, invalid topology).
    Error,
}

impl ExitStatus {
    /// The process exit code.
    pub fn code(self) -> u8 {
        match self {
            ExitStatus::Clean => 0,
            ExitStatus::Findings => 1,
            ExitStatus::Error => 2,
        }
    }
}

/// An error meant for the user: what went wrong and what to do about it.
#[derive(Debug, thiserror::Error)]
#[error("{title}")]
pub struct UserError {
    /// One line: what went wrong, naming the file, line or flag.
    pub title: String,
    /// What to do instead.
    pub help: Option<String>,
}

impl UserError {
    /// An error with a hint.
    pub fn new(title: impl Into<String>, help: impl Into<String>) -> Self {
        UserError {
            title: title.into(),
            help: Some(help.into()),
        }
    }
}

/// A YAML reader's message in words for users: the reader's own jargon (its budget, its
/// options) replaced by what the file does wrong.
pub fn yaml_message(text: &str) -> String {
    let mut text = text.to_string();
    // The message, and the reader's snippet of the file, may each name the breach.
    for _ in 0..4 {
        let next = yaml_message_once(&text);
        if next == text {
            break;
        }
        text = next;
    }
    text
}

fn yaml_message_once(text: &str) -> String {
    if let Some(i) = text.find("budget breached: ") {
        let after = &text[i + "budget breached: ".len()..];
        // `Kind { field: N }`, then whatever the reader adds (a snippet of the file).
        let end = after.find('}').map_or(after.len(), |e| e + 1);
        let (what, tail) = after.split_at(end);
        let (kind, rest) = what.split_once(' ').unwrap_or((what, ""));
        let n: String = rest.chars().filter(|c| c.is_ascii_digit()).collect();
        let limit = match kind {
            "Nodes" => format!(
                "more than {} YAML entries",
                n.parse::<u64>().map_or(n.clone(), |v| (v - 1).to_string())
            ),
            "Depth" => "nesting deeper than keyplan reads".to_string(),
            "ScalarBytes" | "TotalScalarBytes" => "a value longer than keyplan reads".to_string(),
            "Documents" => "more YAML documents than one".to_string(),
            "Aliases" | "AnchorReferences" => "more aliases than keyplan follows".to_string(),
            _ => format!("more {} than keyplan reads", kind.to_lowercase()),
        };
        return format!(
            "{}{limit}: is this the right file? (keyplan bounds what it reads from YAML){tail}",
            &text[..i]
        );
    }
    if let Some(i) = text.find(", set DuplicateKeyPolicy in Options if acceptable") {
        return format!(
            "{} (each key may appear once in a mapping){}",
            &text[..i],
            &text[i + ", set DuplicateKeyPolicy in Options if acceptable".len()..]
        );
    }
    text.to_string()
}

#[cfg(test)]
mod yaml_tests {
    use super::yaml_message;

    #[test]
    fn reader_jargon_becomes_words() {
        let m = yaml_message("line 2 column 3: budget breached: Nodes { nodes: 250001 }");
        assert_eq!(
            m,
            "line 2 column 3: more than 250000 YAML entries: is this the right file? (keyplan bounds what it reads from YAML)"
        );
        assert_eq!(
            yaml_message(
                "duplicate mapping key: a, set DuplicateKeyPolicy in Options if acceptable"
            ),
            "duplicate mapping key: a (each key may appear once in a mapping)"
        );
        assert_eq!(yaml_message("plain"), "plain");
    }
}
