//! The roster colours, and how each surface draws one.
//!
//! A member's `color` in `config.json` is one of eight names (PROTOCOL.md section 5). tmux
//! borders, iTerm2 tab colours and ANSI-coloured names on a terminal all start from that name,
//! so the palette is one table here instead of a `match` per surface that could drift apart.

/// One roster colour and its spelling for each surface that draws it.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub(crate) struct Colour {
    /// The name stored in the roster.
    pub name: &'static str,
    /// tmux's name for it (`pane-border-style fg=...`).
    pub tmux: &'static str,
    /// The ANSI SGR parameters for coloured text.
    pub ansi: &'static str,
    /// iTerm2's tab colour.
    pub rgb: (u8, u8, u8),
}

const fn c(
    name: &'static str,
    tmux: &'static str,
    ansi: &'static str,
    rgb: (u8, u8, u8),
) -> Colour {
    Colour {
        name,
        tmux,
        ansi,
        rgb,
    }
}

/// Teammate colours in round-robin order.
pub(crate) const PALETTE: &[Colour] = &[
    c("blue", "blue", "34", (0, 120, 255)),
    c("green", "green", "32", (0, 180, 0)),
    c("yellow", "yellow", "33", (220, 200, 0)),
    c("purple", "magenta", "35", (160, 0, 200)),
    c("orange", "colour208", "38;5;208", (255, 135, 0)),
    c("pink", "colour205", "38;5;205", (255, 95, 175)),
    c("cyan", "cyan", "36", (0, 200, 200)),
    c("red", "red", "31", (220, 0, 0)),
];

/// The lead's colour.
pub(crate) const LEAD_COLOR: &str = "red";

impl Colour {
    /// The palette entry called `name`, if it is one.
    pub(crate) fn named(name: &str) -> Option<&'static Colour> {
        PALETTE.iter().find(|c| c.name == name)
    }

    /// The colour of the `n`th teammate, round robin.
    pub(crate) fn nth(n: usize) -> &'static Colour {
        &PALETTE[n % PALETTE.len()]
    }

    /// Every colour name, for help and error messages.
    pub(crate) fn names() -> Vec<&'static str> {
        PALETTE.iter().map(|c| c.name).collect()
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn the_lead_colour_is_in_the_palette_and_names_are_unique() {
        assert!(Colour::named(LEAD_COLOR).is_some());
        let mut names = Colour::names();
        names.dedup();
        assert_eq!(names.len(), PALETTE.len());
        assert_eq!(Colour::nth(PALETTE.len()).name, "blue");
    }
}
