//! A boxed table in the rounded style natscli's go-pretty tables use, with an optional
//! centred title row. Hand-written rather than comfy-table so the borders, title row and
//! padding match natscli character for character.

use unicode_width_lite::display_width;

/// Rows of text cells under headers; `render` draws the box.
pub struct Table {
    title: String,
    headers: Vec<String>,
    rows: Vec<Vec<String>>,
    footer: Vec<String>,
    /// Rows (by index) drawn after a separator line.
    separated: Vec<usize>,
    right_aligned: Vec<bool>,
}

impl Table {
    pub fn new(title: impl Into<String>) -> Table {
        Table {
            title: title.into(),
            headers: Vec::new(),
            rows: Vec::new(),
            footer: Vec::new(),
            separated: Vec::new(),
            right_aligned: Vec::new(),
        }
    }

    pub fn headers<I, S>(&mut self, headers: I)
    where
        I: IntoIterator<Item = S>,
        S: Into<String>,
    {
        self.headers = headers.into_iter().map(Into::into).collect();
    }

    pub fn row<I, S>(&mut self, cells: I)
    where
        I: IntoIterator<Item = S>,
        S: Into<String>,
    {
        self.rows.push(cells.into_iter().map(Into::into).collect());
    }

    /// A separator line before the next row (go-pretty's AppendSeparator).
    pub fn separator(&mut self) {
        self.separated.push(self.rows.len());
    }

    /// A totals row under the rows, after a separator (go-pretty's footer, left as written).
    pub fn footer<I, S>(&mut self, cells: I)
    where
        I: IntoIterator<Item = S>,
        S: Into<String>,
    {
        self.footer = cells.into_iter().map(Into::into).collect();
    }

    /// Right-align a column (go-pretty does so for numeric cells).
    pub fn align_right(&mut self, column: usize) {
        if self.right_aligned.len() <= column {
            self.right_aligned.resize(column + 1, false);
        }
        self.right_aligned[column] = true;
    }

    /// The table without a trailing newline.
    pub fn render(&self) -> String {
        let column_count = self
            .rows
            .iter()
            .map(Vec::len)
            .chain([self.headers.len(), self.footer.len()])
            .max()
            .unwrap_or(0);
        if column_count == 0 {
            return String::new();
        }
        let mut widths = vec![0usize; column_count];
        for line in [&self.headers, &self.footer]
            .into_iter()
            .chain(self.rows.iter())
        {
            for (index, cell) in line.iter().enumerate() {
                widths[index] = widths[index].max(display_width(cell));
            }
        }
        // Table width: each column plus one space either side, plus the vertical bars.
        let mut row_length: usize = widths.iter().map(|w| w + 3).sum::<usize>() + 1;
        let title_width = display_width(&self.title);
        if !self.title.is_empty() && title_width + 4 > row_length {
            let grow = title_width + 4 - row_length;
            if let Some(last) = widths.last_mut() {
                *last += grow;
            }
            row_length += grow;
        }
        let mut lines = Vec::new();
        let separator = |left: &str, middle: &str, right: &str| {
            let parts: Vec<String> = widths.iter().map(|w| "─".repeat(w + 2)).collect();
            format!("{left}{}{right}", parts.join(middle))
        };
        if self.title.is_empty() {
            lines.push(separator("╭", "┬", "╮"));
        } else {
            lines.push(format!("╭{}╮", "─".repeat(row_length - 2)));
            let text_width = row_length - 4;
            let space = text_width.saturating_sub(title_width);
            let right = space / 2;
            let left = space - right;
            lines.push(format!(
                "│ {}{}{} │",
                " ".repeat(left),
                self.title,
                " ".repeat(right)
            ));
            lines.push(separator("├", "┬", "┤"));
        }
        let render_cells = |cells: &[String]| {
            let mut text = String::from("│");
            for (index, width) in widths.iter().enumerate() {
                let cell = cells.get(index).map(String::as_str).unwrap_or("");
                let pad = width - display_width(cell);
                if self.right_aligned.get(index).copied().unwrap_or(false) {
                    text.push_str(&format!(" {}{cell} │", " ".repeat(pad)));
                } else {
                    text.push_str(&format!(" {cell}{} │", " ".repeat(pad)));
                }
            }
            text
        };
        if !self.headers.is_empty() {
            lines.push(render_cells(&self.headers));
            lines.push(separator("├", "┼", "┤"));
        }
        for (index, row) in self.rows.iter().enumerate() {
            if index > 0 && self.separated.contains(&index) {
                lines.push(separator("├", "┼", "┤"));
            }
            lines.push(render_cells(row));
        }
        if !self.footer.is_empty() {
            lines.push(separator("├", "┼", "┤"));
            lines.push(render_cells(&self.footer));
        }
        lines.push(separator("╰", "┴", "╯"));
        lines.join("\n")
    }
}

/// Display width without pulling in a crate: box drawing and CJK are rare in our cells,
/// so count characters, treating wide East Asian ranges as two columns.
mod unicode_width_lite {
    pub fn display_width(text: &str) -> usize {
        text.chars()
            .map(|c| {
                let code = c as u32;
                if (0x1100..=0x115F).contains(&code)
                    || (0x2E80..=0xA4CF).contains(&code)
                    || (0xAC00..=0xD7A3).contains(&code)
                    || (0xF900..=0xFAFF).contains(&code)
                    || (0xFF00..=0xFF60).contains(&code)
                    || (0x1F300..=0x1FAFF).contains(&code)
                {
                    2
                } else {
                    1
                }
            })
            .sum()
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn renders_title_headers_and_rows() {
        let mut table = Table::new("Report");
        table.headers(["Name", "Count"]);
        table.row(["a", "1"]);
        let text = table.render();
        let expected = "\
╭──────────────╮
│    Report    │
├──────┬───────┤
│ Name │ Count │
├──────┼───────┤
│ a    │ 1     │
╰──────┴───────╯";
        assert_eq!(text, expected);
    }

    #[test]
    fn renders_separators_and_a_footer() {
        let mut table = Table::new("");
        table.headers(["Name", "Count"]);
        table.align_right(1);
        table.row(["a", "1"]);
        table.row(["b", "22"]);
        table.separator();
        table.row(["c", "0"]);
        table.footer(["", "23"]);
        let expected = "\
╭──────┬───────╮
│ Name │ Count │
├──────┼───────┤
│ a    │     1 │
│ b    │    22 │
├──────┼───────┤
│ c    │     0 │
├──────┼───────┤
│      │    23 │
╰──────┴───────╯";
        assert_eq!(table.render(), expected);
    }
}
