//! What a benchmark returns and how it is printed: a [`Section`] (title, table, notes) that
//! becomes Markdown for a terminal and BENCHMARKS.md, or one JSON line with `--json` (which the
//! smoke test reads), and the number formats every table shares.

use serde::Serialize;

/// One benchmark's result.
#[derive(Debug, Serialize)]
pub(crate) struct Section {
    pub(crate) name: &'static str,
    pub(crate) title: String,
    pub(crate) table: Table,
    pub(crate) notes: Vec<String>,
}

impl Section {
    pub(crate) fn to_markdown(&self) -> String {
        let mut out = format!("### {}\n\n{}", self.title, self.table.to_markdown());
        for note in &self.notes {
            out.push_str(&format!("\n- {note}"));
        }
        out.push('\n');
        out
    }
}

/// A table whose Markdown is also aligned for a terminal.
#[derive(Debug, Serialize)]
pub(crate) struct Table {
    headers: Vec<String>,
    rows: Vec<Vec<String>>,
}

impl Table {
    pub(crate) fn new(headers: &[&str]) -> Table {
        Table {
            headers: headers.iter().map(|h| h.to_string()).collect(),
            rows: vec![],
        }
    }

    pub(crate) fn row(&mut self, cells: Vec<String>) {
        self.rows.push(cells);
    }

    pub(crate) fn to_markdown(&self) -> String {
        let cols = self.headers.len();
        let mut width: Vec<usize> = self.headers.iter().map(|h| h.chars().count()).collect();
        for row in &self.rows {
            for (i, cell) in row.iter().enumerate().take(cols) {
                width[i] = width[i].max(cell.chars().count());
            }
        }
        let line = |cells: &[String]| {
            let padded: Vec<String> = (0..cols)
                .map(|i| {
                    let cell = cells.get(i).map_or("", String::as_str);
                    format!("{cell:<w$}", w = width[i])
                })
                .collect();
            format!("| {} |\n", padded.join(" | "))
        };
        let mut out = line(&self.headers);
        let rule: Vec<String> = width.iter().map(|w| "-".repeat(*w)).collect();
        out.push_str(&format!("|-{}-|\n", rule.join("-|-")));
        for row in &self.rows {
            out.push_str(&line(row));
        }
        out
    }
}

/// Milliseconds with as many decimals as are meaningful.
pub(crate) fn fmt_ms(x: f64) -> String {
    if x.is_nan() {
        "-".into()
    } else if x < 10.0 {
        format!("{x:.2}")
    } else if x < 100.0 {
        format!("{x:.1}")
    } else {
        format!("{x:.0}")
    }
}

/// A ratio such as `2.35x`; `-` when a baseline was missing.
pub(crate) fn fmt_ratio(x: f64) -> String {
    if !x.is_finite() {
        "-".into()
    } else if x < 10.0 {
        format!("{x:.2}x")
    } else {
        format!("{x:.0}x")
    }
}

/// An integer with thousands separators.
pub(crate) fn fmt_int(n: u64) -> String {
    let s = n.to_string();
    let mut out = String::new();
    for (i, c) in s.chars().enumerate() {
        if i > 0 && (s.len() - i) % 3 == 0 {
            out.push(',');
        }
        out.push(c);
    }
    out
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn tables_are_aligned_markdown() {
        let mut t = Table::new(&["a", "long header"]);
        t.row(vec!["wide cell".into(), "1".into()]);
        assert_eq!(
            t.to_markdown(),
            "| a         | long header |\n|-----------|-------------|\n| wide cell | 1           |\n"
        );
    }

    #[test]
    fn thousands_get_separators() {
        assert_eq!(fmt_int(7), "7");
        assert_eq!(fmt_int(10_000), "10,000");
        assert_eq!(fmt_int(1_234_567), "1,234,567");
    }
}
