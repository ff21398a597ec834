//! The "Label: value" report layout natscli uses for `stream info`, `consumer info`,
//! `account info` and friends: a heading, right-aligned labels padded to the longest label
//! in the whole report, and section titles ending in a colon.

use std::collections::BTreeMap;

use std::fmt::Write;

enum Row {
    Pair(String, String),
    Title(String),
    Line(Vec<String>),
    /// natscli's `Indent`: every following row starts with this many spaces.
    Indent(usize),
}

/// Collects rows, then renders them all at once so every label lines up.
pub struct Columns {
    heading: String,
    rows: Vec<Row>,
}

impl Columns {
    pub fn new(heading: impl Into<String>) -> Columns {
        Columns {
            heading: heading.into(),
            rows: Vec::new(),
        }
    }

    pub fn row(&mut self, label: &str, value: impl ToString) {
        let label = label.strip_suffix(':').unwrap_or(label);
        self.rows
            .push(Row::Pair(label.to_string(), value.to_string()));
    }

    pub fn row_if(&mut self, label: &str, value: impl ToString, condition: bool) {
        if condition {
            self.row(label, value);
        }
    }

    pub fn row_if_not_empty(&mut self, label: &str, value: &str) {
        if !value.is_empty() {
            self.row(label, value);
        }
    }

    pub fn section(&mut self, title: &str) {
        self.rows.push(Row::Title(title.to_string()));
    }

    /// A free line outside the columns; with no parts, a blank line.
    pub fn line(&mut self, parts: &[&str]) {
        self.rows
            .push(Row::Line(parts.iter().map(|p| p.to_string()).collect()));
    }

    /// natscli's `Indent(width)`: the rows after it are indented by `width` spaces (zero
    /// resets); labels still line up across the whole report.
    pub fn indent(&mut self, width: usize) {
        self.rows.push(Row::Indent(width));
    }

    /// natscli's `AddStringsAsValue`: sorted values under one label, the label on the first
    /// only; a value wider than the screen (less 30 columns; 80 without a terminal) keeps
    /// its two ends around " ... ".
    pub fn strings_as_value(&mut self, label: &str, values: &[String]) {
        let width = console::Term::stdout()
            .size_checked()
            .map(|(_, columns)| {
                let columns = usize::from(columns);
                if columns.saturating_sub(30) <= 10 {
                    10
                } else {
                    columns - 30
                }
            })
            .unwrap_or(80);
        let mut sorted = values.to_vec();
        sorted.sort();
        for (index, value) in sorted.iter().enumerate() {
            let characters: Vec<char> = value.chars().collect();
            let shown = if characters.len() > width && width > 20 {
                let half = width / 2 - 10;
                let head: String = characters[..half].iter().collect();
                let tail: String = characters[characters.len() - half..].iter().collect();
                format!("{head} ... {tail}")
            } else {
                value.clone()
            };
            self.row(if index == 0 { label } else { "" }, shown);
        }
    }

    /// natscli's Metadata section: the user's keys (`_nats.*` are the server's).
    pub fn user_metadata(&mut self, metadata: &BTreeMap<String, String>) {
        let mut user = metadata
            .iter()
            .filter(|(key, _)| !key.starts_with("_nats"))
            .peekable();
        if user.peek().is_none() {
            return;
        }
        self.section("Metadata");
        for (key, value) in user {
            self.row(key, value);
        }
    }

    /// natscli's Host Version and Required API Level rows, from the server's `_nats.*` keys.
    pub fn api_levels(&mut self, metadata: &BTreeMap<String, String>) {
        let text = |key: &str| metadata.get(key).cloned().unwrap_or_default();
        let version = text("_nats.ver");
        if !version.is_empty() {
            self.row("Host Version", &version);
        }
        let level = text("_nats.level");
        let required = text("_nats.req.level");
        if !level.is_empty() || !required.is_empty() {
            let required = if required.is_empty() {
                "0".to_string()
            } else {
                required
            };
            self.row(
                "Required API Level",
                format!("{required} hosted at level {level}"),
            );
        }
    }

    pub fn render(&self) -> String {
        let longest = self
            .rows
            .iter()
            .filter_map(|row| match row {
                Row::Pair(label, _) => Some(label.chars().count()),
                _ => None,
            })
            .max()
            .unwrap_or(0);
        let mut out = String::new();
        if !self.heading.is_empty() {
            let _ = writeln!(out, "{}", self.heading);
            let _ = writeln!(out);
        }
        #[derive(PartialEq, Clone, Copy)]
        enum Kind {
            None,
            Pair,
            Title,
            Line,
        }
        let mut previous = Kind::None;
        let mut previous_empty = false;
        let mut indent = String::new();
        for (index, row) in self.rows.iter().enumerate() {
            match row {
                Row::Indent(width) => indent = " ".repeat(*width),
                Row::Title(title) => {
                    if (index != 0 && previous != Kind::Title && previous != Kind::Line)
                        || (previous == Kind::Line && !previous_empty)
                    {
                        let _ = writeln!(out);
                    }
                    if title.ends_with(':') {
                        let _ = writeln!(out, "{indent}{title}");
                    } else {
                        let _ = writeln!(out, "{indent}{title}:");
                    }
                    let _ = writeln!(out);
                    previous = Kind::Title;
                    previous_empty = false;
                }
                Row::Pair(label, value) => {
                    let padding = longest + 2 - label.chars().count();
                    if label.is_empty() {
                        let _ = writeln!(out, "{indent}{} {value}", " ".repeat(padding + 1));
                    } else {
                        let _ = writeln!(out, "{indent}{}{label}: {value}", " ".repeat(padding));
                    }
                    previous = Kind::Pair;
                    previous_empty = false;
                }
                Row::Line(parts) => {
                    if previous == Kind::Title && parts.is_empty() {
                        continue;
                    }
                    // Go's Println puts a space between the indent and each part.
                    let mut text = indent.clone();
                    for part in parts {
                        text.push(' ');
                        text.push_str(part);
                    }
                    let _ = writeln!(out, "{text}");
                    previous = Kind::Line;
                    previous_empty = parts.is_empty();
                }
            }
        }
        out
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn aligns_labels_across_sections() {
        let mut columns = Columns::new("Heading");
        columns.row("Subjects", "a.>");
        columns.section("Options");
        columns.row("Retention", "Limits");
        columns.row("Acknowledgments", true);
        let text = columns.render();
        assert_eq!(
            text,
            "Heading\n\n         Subjects: a.>\n\nOptions:\n\n        Retention: Limits\n  Acknowledgments: true\n"
        );
    }

    #[test]
    fn indents_titles_rows_and_lines() {
        let mut columns = Columns::new("");
        columns.row("Client ID", 5);
        columns.section("Permissions");
        columns.indent(2);
        columns.line(&["Publish:"]);
        columns.strings_as_value("Allow", &["b".to_string(), "a".to_string()]);
        columns.line(&[]);
        columns.indent(0);
        columns.indent(2);
        columns.section("Tier: Default");
        columns.indent(0);
        assert_eq!(
            columns.render(),
            "  Client ID: 5\n\nPermissions:\n\n   Publish:\n        Allow: a\n               b\n  \n  Tier: Default:\n\n"
        );
    }
}
