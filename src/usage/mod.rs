//! Token usage and its cost: the figures `gleaner usage` adds up ([`Counts`]), and what they
//! cost ([`Prices`]). Pure: the store keeps the counts (`store::usage`), the query layer groups
//! them (`query::usage`).
//!
//! Counted as ccusage counts them, so the two agree: each API message once (its line with the
//! largest total; a main-chain line over a sub-agent's replay), sub-agents' replies with their
//! session (also those seen only through a parent's `agent_progress` line), error and
//! `<synthetic>` lines left out, a line's own `costUSD` used where it has one.

mod pricing;

pub use pricing::{Price, Prices, PricingError};

/// Tokens of one message in one bucket past which a long-context model's higher rate applies.
pub const TIER_TOKENS: i64 = 200_000;

/// Token counts of a set of messages, with what their cost needs: the one-hour part of the
/// cache writes, the tokens past [`TIER_TOKENS`] in each bucket of each message (summed, so a
/// cost stays linear in the sums), and the cost transcripts recorded themselves.
#[derive(Debug, Clone, Copy, Default, PartialEq)]
pub struct Counts {
    /// Messages.
    pub messages: i64,
    /// Input tokens.
    pub input: i64,
    /// Output tokens.
    pub output: i64,
    /// Cache-creation tokens (both lifetimes).
    pub creation: i64,
    /// The one-hour part of `creation`.
    pub creation_1h: i64,
    /// Cache-read tokens.
    pub read: i64,
    /// Input tokens past the tier, message by message.
    pub over_input: i64,
    /// Output tokens past the tier.
    pub over_output: i64,
    /// Five-minute cache-write tokens past the tier.
    pub over_creation: i64,
    /// One-hour cache-write tokens past the tier.
    pub over_creation_1h: i64,
    /// Cache-read tokens past the tier.
    pub over_read: i64,
    /// Sum of the `costUSD` the messages' lines recorded (messages with one are counted apart:
    /// their tokens are not priced again).
    pub recorded_cost: f64,
}

fn over(n: i64) -> i64 {
    (n - TIER_TOKENS).max(0)
}

impl Counts {
    /// One message's counts from its four token counts, the one-hour part of its cache
    /// writes and the cost its line recorded.
    pub fn message(
        [input, output, creation, read]: [i64; 4],
        creation_1h: i64,
        recorded_cost: Option<f64>,
    ) -> Counts {
        let five = (creation - creation_1h).max(0);
        Counts {
            messages: 1,
            input,
            output,
            creation,
            creation_1h,
            read,
            over_input: over(input),
            over_output: over(output),
            over_creation: over(five),
            over_creation_1h: over(creation_1h),
            over_read: over(read),
            recorded_cost: recorded_cost.unwrap_or(0.0),
        }
    }

    /// Add `other` times `sign` (1 to add, -1 to take away).
    pub fn add(&mut self, o: &Counts, sign: i64) {
        self.messages += sign * o.messages;
        self.input += sign * o.input;
        self.output += sign * o.output;
        self.creation += sign * o.creation;
        self.creation_1h += sign * o.creation_1h;
        self.read += sign * o.read;
        self.over_input += sign * o.over_input;
        self.over_output += sign * o.over_output;
        self.over_creation += sign * o.over_creation;
        self.over_creation_1h += sign * o.over_creation_1h;
        self.over_read += sign * o.over_read;
        self.recorded_cost += sign as f64 * o.recorded_cost;
    }

    /// Nothing to add (a replaced message whose figures did not change).
    pub fn is_zero(&self) -> bool {
        *self == Counts::default()
    }

    /// All four token counts.
    pub fn total(&self) -> i64 {
        self.input + self.output + self.creation + self.read
    }
}
