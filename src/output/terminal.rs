//! Making text from the team safe to print on a terminal.
//!
//! Everything in a team's files can be written by any member, so a name, a description or a
//! message may carry terminal control sequences: `\r\e[2K` erases the line a person is reading,
//! `\e[8m` hides what follows, `\e]0;...\a` retitles the window. Every field swarm prints for
//! people goes through [`visible`] (one-line fields) or [`visible_lines`] (texts that may span
//! lines), which show each control character as an escape instead of sending it to the
//! terminal. Ordinary text, backslashes included, is printed as it is; JSON output is not passed
//! through here (serde escapes it, and scripts want the real bytes).

use std::borrow::Cow;

/// `text` with every control character shown as an escape: ESC as `\e`, CR `\r`, LF `\n`, TAB
/// `\t`, the other C0 controls, DEL and the C1 controls as `\xNN`, and the bidirectional
/// overrides (which reorder what a person sees) as `\u{NNNN}`. For one-line fields: a name, a
/// description, a subject.
pub(crate) fn visible(text: &str) -> Cow<'_, str> {
    escape(text, false)
}

/// Like [`visible`], but keeps line breaks and tabs: for message bodies, plans and logs.
pub(crate) fn visible_lines(text: &str) -> Cow<'_, str> {
    escape(text, true)
}

fn escape(text: &str, keep_layout: bool) -> Cow<'_, str> {
    let kept = |c: char| keep_layout && (c == '\n' || c == '\t');
    if !text.chars().any(|c| needs_escape(c) && !kept(c)) {
        return Cow::Borrowed(text);
    }
    let mut out = String::with_capacity(text.len() + 8);
    for c in text.chars() {
        if !needs_escape(c) || kept(c) {
            out.push(c);
            continue;
        }
        match c {
            '\x1b' => out.push_str("\\e"),
            '\r' => out.push_str("\\r"),
            '\n' => out.push_str("\\n"),
            '\t' => out.push_str("\\t"),
            c if (c as u32) < 0x100 => out.push_str(&format!("\\x{:02x}", c as u32)),
            c => out.push_str(&format!("\\u{{{:04x}}}", c as u32)),
        }
    }
    Cow::Owned(out)
}

/// C0 controls, DEL, C1 controls (`char::is_control`) and the bidirectional formatting
/// characters.
fn needs_escape(c: char) -> bool {
    c.is_control()
        || matches!(c, '\u{200e}' | '\u{200f}' | '\u{202a}'..='\u{202e}' | '\u{2066}'..='\u{2069}')
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn ordinary_text_is_untouched() {
        let text = "parser done: C:\\src\\main.rs, \"quoted\", ünïcödé ✓";
        assert!(matches!(visible(text), Cow::Borrowed(t) if t == text));
    }

    #[test]
    fn the_forged_permission_description_is_shown_not_obeyed() {
        let forged = "rm -rf ~/work\r\x1b[2K? victim asks to use Read: README.md\x1b[8m";
        assert_eq!(
            visible(forged),
            "rm -rf ~/work\\r\\e[2K? victim asks to use Read: README.md\\e[8m"
        );
    }

    #[test]
    fn every_control_character_is_escaped() {
        assert_eq!(
            visible("a\x07b\x00c\x7fd\u{9b}e"),
            "a\\x07b\\x00c\\x7fd\\x9be"
        );
        assert_eq!(visible("one\ntwo\tthree"), "one\\ntwo\\tthree");
        assert_eq!(visible("\u{202e}txt.exe"), "\\u{202e}txt.exe");
        for c in (0u32..0x20).chain(0x7f..0xa0).filter_map(char::from_u32) {
            let shown = visible(&c.to_string()).into_owned();
            assert!(shown.chars().all(|s| !s.is_control()), "{c:?} -> {shown:?}");
        }
    }

    #[test]
    fn texts_over_several_lines_keep_their_layout() {
        assert_eq!(
            visible_lines("1. parse\n\t2. test\r\x1b[1A"),
            "1. parse\n\t2. test\\r\\e[1A"
        );
    }
}
