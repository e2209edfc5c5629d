//! What tokens cost, for estimates: a small table of list prices in the source, which the user
//! can override or extend in swarm's settings file.
//!
//! Prices are US dollars per million tokens, matched by a piece of the model name (the first
//! entry whose key the model id contains wins; overrides are tried before the built-in table).
//! A 5-minute cache write costs 1.25 times the input price, a 1-hour one twice it, a cache read
//! a tenth of it, as Anthropic's price list has it; an override may set each. Every figure made
//! from these is an estimate: actual bills depend on discounts, batch and regional pricing and
//! long-context tiers that the transcripts do not show.
//!
//! The override is `prices` in `$XDG_CONFIG_HOME/swarm/settings.json` (else
//! `~/.config/swarm/settings.json`):
//! `{"prices": {"sonnet": {"input": 3, "output": 15, "cacheWrite": 3.75, "cacheRead": 0.3}}}`.

use std::path::PathBuf;

use serde::Deserialize;
use serde_json::Value;

use crate::error::{Error, Result};

/// USD per million tokens.
#[derive(Debug, Clone, Copy, PartialEq, Deserialize)]
#[serde(rename_all = "camelCase", deny_unknown_fields)]
pub(crate) struct Price {
    pub(crate) input: f64,
    pub(crate) output: f64,
    #[serde(default)]
    pub(crate) cache_write: Option<f64>,
    #[serde(default, rename = "cacheWrite1h")]
    pub(crate) cache_write_1h: Option<f64>,
    #[serde(default)]
    pub(crate) cache_read: Option<f64>,
}

impl Price {
    const fn list(input: f64, output: f64) -> Price {
        Price {
            input,
            output,
            cache_write: None,
            cache_write_1h: None,
            cache_read: None,
        }
    }

    pub(crate) fn cache_write(&self) -> f64 {
        self.cache_write.unwrap_or(self.input * 1.25)
    }

    pub(crate) fn cache_write_1h(&self) -> f64 {
        self.cache_write_1h.unwrap_or(self.input * 2.0)
    }

    pub(crate) fn cache_read(&self) -> f64 {
        self.cache_read.unwrap_or(self.input * 0.1)
    }
}

/// Anthropic's list prices (USD per million tokens), most specific names first.
const BUILT_IN: &[(&str, Price)] = &[
    ("opus-4-5", Price::list(5.0, 25.0)),
    ("opus", Price::list(15.0, 75.0)),
    ("sonnet", Price::list(3.0, 15.0)),
    ("haiku-4", Price::list(1.0, 5.0)),
    ("3-5-haiku", Price::list(0.8, 4.0)),
    ("haiku", Price::list(0.25, 1.25)),
];

/// The price of a model no entry names: Sonnet's, the model Claude Code teammates run by
/// default.
const FALLBACK: Price = Price::list(3.0, 15.0);

/// The prices in force: the user's overrides, then the built-in table.
#[derive(Debug, Clone, Default)]
pub(crate) struct Prices {
    overrides: Vec<(String, Price)>,
    /// Where the overrides came from, if anywhere.
    pub(crate) file: Option<PathBuf>,
}

impl Prices {
    /// The built-in table with the user's overrides, if the settings file has any. A settings
    /// file that does not parse, or a price that is not a number, is an error that names it.
    pub(crate) fn load() -> Result<Prices> {
        let Some(path) = settings_path() else {
            return Ok(Prices::default());
        };
        let bytes = match std::fs::read(&path) {
            Ok(bytes) => bytes,
            Err(e) if e.kind() == std::io::ErrorKind::NotFound => return Ok(Prices::default()),
            Err(e) => return Err(Error::io("read", &path)(e)),
        };
        let bad = |why: String| {
            Error::usage(format!(
                "{} {why}; `prices` maps a piece of a model name to \
                 {{\"input\": USD, \"output\": USD, \"cacheWrite\": USD, \"cacheRead\": USD}} per \
                 million tokens",
                path.display()
            ))
        };
        let settings: Value =
            serde_json::from_slice(&bytes).map_err(|e| bad(format!("is not valid JSON ({e})")))?;
        let Some(table) = settings.get("prices") else {
            return Ok(Prices::default());
        };
        let table = table
            .as_object()
            .ok_or_else(|| bad("has a `prices` that is not an object".into()))?;
        let mut overrides = Vec::new();
        for (key, value) in table {
            let price: Price = serde_json::from_value(value.clone())
                .map_err(|e| bad(format!("has a bad price for {key:?} ({e})")))?;
            overrides.push((key.to_lowercase(), price));
        }
        Ok(Prices {
            overrides,
            file: Some(path),
        })
    }

    /// The price for `model`, and whether a table entry named it (else it is the fallback).
    pub(crate) fn of(&self, model: &str) -> (Price, bool) {
        let model = model.to_lowercase();
        self.overrides
            .iter()
            .map(|(k, p)| (k.as_str(), *p))
            .chain(BUILT_IN.iter().copied())
            .find(|(key, _)| model.contains(key))
            .map_or((FALLBACK, false), |(_, p)| (p, true))
    }
}

/// `$XDG_CONFIG_HOME/swarm/settings.json`, else `~/.config/swarm/settings.json`.
pub(crate) fn settings_path() -> Option<PathBuf> {
    let from = |k: &str| {
        std::env::var_os(k)
            .filter(|v| !v.is_empty())
            .map(PathBuf::from)
    };
    from("XDG_CONFIG_HOME")
        .or_else(|| from("HOME").map(|h| h.join(".config")))
        .map(|d| d.join("swarm").join("settings.json"))
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn the_most_specific_name_wins_and_overrides_come_first() {
        let prices = Prices::default();
        assert_eq!(prices.of("claude-opus-4-5-20251101").0.input, 5.0);
        assert_eq!(prices.of("claude-opus-4-1-20250805").0.output, 75.0);
        assert_eq!(prices.of("claude-3-5-haiku-20241022").0.input, 0.8);
        assert_eq!(prices.of("claude-haiku-4-5").0.cache_read(), 0.1);
        assert_eq!(prices.of("claude-sonnet-4-5").0.cache_write(), 3.75);
        assert!(
            !prices.of("gpt-5").1,
            "an unknown model is priced by the fallback"
        );
        let custom = Prices {
            overrides: vec![("sonnet".into(), Price::list(1.0, 2.0))],
            file: None,
        };
        assert_eq!(custom.of("claude-Sonnet-4-5").0.output, 2.0);
    }
}
