//! A table for people: columns as wide as their widest cell (so `in-process` rows line up with
//! tmux ones), two spaces between them, each left- or right-aligned, the last column left as it
//! is. `swarm status` and `swarm usage` print theirs through here, so the two cannot drift.

use crate::error::Result;

/// How a column lines up.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub(crate) enum Align {
    Left,
    Right,
}

/// Prints `rows` (the first one is usually the heading), indented two spaces; `align` gives
/// every column but the last.
pub(crate) fn print<const N: usize>(rows: &[[String; N]], align: &[Align]) -> Result<()> {
    let padded = N.saturating_sub(1);
    let widths: Vec<usize> = (0..padded)
        .map(|c| rows.iter().map(|r| r[c].chars().count()).max().unwrap_or(0))
        .collect();
    for r in rows {
        super::line(format_row(r, &widths, align))?;
    }
    Ok(())
}

fn format_row(row: &[String], widths: &[usize], align: &[Align]) -> String {
    let mut out = String::new();
    for (c, cell) in row.iter().enumerate() {
        out.push_str("  ");
        let Some(&width) = widths.get(c) else {
            out.push_str(cell);
            continue;
        };
        let pad = " ".repeat(width.saturating_sub(cell.chars().count()));
        match align.get(c).copied().unwrap_or(Align::Left) {
            Align::Left => {
                out.push_str(cell);
                out.push_str(&pad);
            }
            Align::Right => {
                out.push_str(&pad);
                out.push_str(cell);
            }
        }
    }
    out
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn columns_are_as_wide_as_their_widest_cell_and_the_last_is_left_as_it_is() {
        let rows = [
            ["NAME".to_string(), "N".into(), "TASK".into()],
            ["a".into(), "12".into(), "#1 x".into()],
        ];
        let widths = [4, 2];
        let align = [Align::Left, Align::Right];
        assert_eq!(format_row(&rows[0], &widths, &align), "  NAME   N  TASK");
        assert_eq!(format_row(&rows[1], &widths, &align), "  a     12  #1 x");
    }
}
