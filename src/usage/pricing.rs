//! The price table: model name -> USD per million tokens, embedded from `prices.toml` (which
//! says where and when it was taken), with the configuration's `[pricing]` entries over it.

use std::collections::BTreeMap;

use serde::Deserialize;

use super::Counts;

/// The embedded table (see its header for its source and date).
const EMBEDDED: &str = include_str!("prices.toml");

/// A model's prices, USD per million tokens.
#[derive(Debug, Clone, Copy, PartialEq, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct Price {
    /// Input tokens.
    pub input: f64,
    /// Output tokens.
    pub output: f64,
    /// Five-minute cache writes (one-hour writes cost twice `input`).
    pub cache_write: f64,
    /// Cache reads.
    pub cache_read: f64,
    /// Input tokens of one message past 200k, where the model has a long-context rate.
    #[serde(default)]
    pub input_above_200k: Option<f64>,
    /// Output tokens past 200k.
    #[serde(default)]
    pub output_above_200k: Option<f64>,
    /// Cache writes past 200k.
    #[serde(default)]
    pub cache_write_above_200k: Option<f64>,
    /// Cache reads past 200k.
    #[serde(default)]
    pub cache_read_above_200k: Option<f64>,
}

/// A price table that cannot be used.
#[derive(Debug, thiserror::Error)]
pub enum PricingError {
    /// Not a table of prices.
    #[error("pricing: {0}")]
    Parse(String),
    /// A negative or non-finite price.
    #[error("pricing: {model}: {field} must be a number >= 0, got {value}")]
    Bad {
        /// Model.
        model: String,
        /// Field.
        field: &'static str,
        /// Value given.
        value: f64,
    },
}

/// Prices by model name.
#[derive(Debug, Clone, PartialEq)]
pub struct Prices {
    by_model: BTreeMap<String, Price>,
}

impl Default for Prices {
    fn default() -> Self {
        Prices::embedded()
    }
}

impl Prices {
    /// The embedded table.
    pub fn embedded() -> Prices {
        // The embedded file is checked by a unit test; an error here is a build defect, and an
        // empty table (every cost unknown) is the honest answer to it.
        let by_model = toml::from_str(EMBEDDED).unwrap_or_default();
        Prices { by_model }
    }

    /// The embedded table with `overrides` (the configuration's `[pricing]`) over it.
    pub fn with_overrides(overrides: BTreeMap<String, Price>) -> Result<Prices, PricingError> {
        let mut p = Prices::embedded();
        for (model, price) in overrides {
            check(&model, &price)?;
            p.by_model.insert(model, price);
        }
        Ok(p)
    }

    /// Parse a `[pricing]` table's text (tests and the configuration).
    pub fn parse_overrides(text: &str) -> Result<BTreeMap<String, Price>, PricingError> {
        toml::from_str(text).map_err(|e| PricingError::Parse(e.message().to_string()))
    }

    /// The price of `model`: its own key, its key without a date suffix, or the longest key
    /// it starts with (`claude-opus-4-1-20250805` -> `claude-opus-4-1`).
    pub fn find(&self, model: &str) -> Option<&Price> {
        if let Some(p) = self.by_model.get(model) {
            return Some(p);
        }
        self.by_model
            .iter()
            .filter(|(k, _)| {
                model
                    .strip_prefix(k.as_str())
                    .is_some_and(|rest| rest.starts_with('-'))
            })
            .max_by_key(|(k, _)| k.len())
            .map(|(_, p)| p)
    }

    /// What `counts` of `model` cost: the recorded cost of the messages that have one plus
    /// the priced tokens of the others; `None` when tokens need a price the table lacks.
    pub fn cost(&self, model: &str, counts: &Counts, recorded: bool) -> Option<f64> {
        if recorded {
            return Some(counts.recorded_cost);
        }
        if counts.total() == 0 {
            return Some(0.0);
        }
        let p = self.find(model)?;
        let tier = |n: i64, over: i64, base: f64, above: Option<f64>| {
            n as f64 * base + above.map_or(0.0, |a| over as f64 * (a - base))
        };
        let five = counts.creation - counts.creation_1h;
        let usd = tier(counts.input, counts.over_input, p.input, p.input_above_200k)
            + tier(
                counts.output,
                counts.over_output,
                p.output,
                p.output_above_200k,
            )
            + tier(
                five,
                counts.over_creation,
                p.cache_write,
                p.cache_write_above_200k,
            )
            + tier(
                counts.creation_1h,
                counts.over_creation_1h,
                2.0 * p.input,
                p.input_above_200k.map(|a| 2.0 * a),
            )
            + tier(
                counts.read,
                counts.over_read,
                p.cache_read,
                p.cache_read_above_200k,
            );
        Some(usd / 1e6)
    }
}

impl Prices {
    /// The sum of `parts` (model, cost recorded, counts) and their cost: `None` as soon as one
    /// part needs a price the table lacks (an unknown cost is never shown as a partial one).
    /// What every report and `status` add up.
    pub fn sum<'a>(
        &self,
        parts: impl IntoIterator<Item = (&'a str, bool, &'a Counts)>,
    ) -> (Counts, Option<f64>) {
        let mut total = Counts::default();
        let mut usd = Some(0.0);
        for (model, recorded, c) in parts {
            total.add(c, 1);
            usd = usd.zip(self.cost(model, c, recorded)).map(|(a, b)| a + b);
        }
        (total, usd)
    }
}

fn check(model: &str, p: &Price) -> Result<(), PricingError> {
    let fields = [
        ("input", Some(p.input)),
        ("output", Some(p.output)),
        ("cache_write", Some(p.cache_write)),
        ("cache_read", Some(p.cache_read)),
        ("input_above_200k", p.input_above_200k),
        ("output_above_200k", p.output_above_200k),
        ("cache_write_above_200k", p.cache_write_above_200k),
        ("cache_read_above_200k", p.cache_read_above_200k),
    ];
    for (field, v) in fields {
        if let Some(value) = v.filter(|v| !v.is_finite() || *v < 0.0) {
            return Err(PricingError::Bad {
                model: model.to_string(),
                field,
                value,
            });
        }
    }
    Ok(())
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn the_embedded_table_reads_and_every_price_is_valid() {
        let table: BTreeMap<String, Price> = toml::from_str(EMBEDDED).unwrap();
        assert!(table.len() >= 10);
        for (m, p) in &table {
            check(m, p).unwrap();
        }
    }

    #[test]
    fn dated_names_find_their_model_and_the_longest_key_wins() {
        let p = Prices::embedded();
        assert_eq!(p.find("claude-opus-4-1-20250805").unwrap().input, 15.0);
        assert_eq!(p.find("claude-opus-4-5-20251101").unwrap().input, 5.0);
        assert_eq!(p.find("claude-opus-4-20250514").unwrap().input, 15.0);
        assert!(p.find("gpt-4o").is_none());
        assert!(p.find("claude-opus-40").is_none());
    }

    #[test]
    fn cost_prices_each_bucket_the_one_hour_writes_and_the_long_context_tier() {
        let p = Prices::embedded();
        let c = Counts {
            messages: 1,
            input: 1_000_000,
            output: 1_000_000,
            creation: 1_000_000,
            creation_1h: 400_000,
            read: 1_000_000,
            ..Counts::default()
        };
        let usd = p.cost("claude-haiku-4-5-20251001", &c, false).unwrap();
        // 1 + 5 + 0.6 * 1.25 + 0.4 * 2 + 0.1
        assert!((usd - 7.65).abs() < 1e-9, "{usd}");
        let long = Counts {
            messages: 1,
            read: 300_000,
            over_read: 100_000,
            ..Counts::default()
        };
        let usd = p.cost("claude-sonnet-4-5-20250929", &long, false).unwrap();
        // 200k at 0.3 and 100k at 0.6
        assert!((usd - 0.12).abs() < 1e-9, "{usd}");
        assert_eq!(p.cost("mystery-model", &c, false), None);
        assert_eq!(
            p.cost("mystery-model", &Counts::default(), false),
            Some(0.0)
        );
        let recorded = Counts {
            recorded_cost: 0.25,
            ..c
        };
        assert_eq!(p.cost("mystery-model", &recorded, true), Some(0.25));
    }

    #[test]
    fn overrides_add_models_and_reject_bad_prices() {
        let o = Prices::parse_overrides(
            "[\"my-model\"]\ninput = 1.0\noutput = 2.0\ncache_write = 1.0\ncache_read = 0.1\n",
        )
        .unwrap();
        let p = Prices::with_overrides(o).unwrap();
        assert_eq!(p.find("my-model-2026").unwrap().output, 2.0);
        let bad = Prices::parse_overrides(
            "[m]\ninput = -1.0\noutput = 2.0\ncache_write = 1.0\ncache_read = 0.1\n",
        )
        .unwrap();
        let e = Prices::with_overrides(bad).unwrap_err().to_string();
        assert!(e.contains("m: input"), "{e}");
        assert!(Prices::parse_overrides("[m]\ninput = 1.0\n").is_err());
    }
}
