//! Token usage of one record: the rows `gleaner usage` counts (see `store::usage`).

use std::collections::HashMap;

use super::rows::{unix_millis_from_iso, UsageRow};
use crate::parse::{Kind, Record};

/// The usage rows of `rec` into `usage` (one per message id): an assistant line's reply, and
/// the sub-agent reply an `agent_progress` line carries.
pub(super) fn collect(usage: &mut HashMap<String, UsageRow>, rec: &Record<'_>, session_id: &str) {
    if rec.kind == Kind::Assistant {
        let Some(msg) = &rec.message else { return };
        let (Some(id), Some(u)) = (msg.id.as_deref(), msg.usage.as_ref()) else {
            return;
        };
        // Error and synthetic lines are not API calls: ccusage leaves them out too.
        let model = msg.model.as_deref();
        if rec.is_api_error_message || model == Some("<synthetic>") {
            return;
        }
        let row = UsageRow {
            message_id: id.to_string(),
            session_id: session_id.to_string(),
            input_tokens: u.input_tokens,
            output_tokens: u.output_tokens,
            cache_creation_input_tokens: u.cache_creation_input_tokens,
            cache_read_input_tokens: u.cache_read_input_tokens,
            cache_creation_1h_tokens: u.cache_creation_1h_tokens,
            model: model.filter(|m| !m.is_empty()).map(str::to_string),
            ts_ms: rec.timestamp.as_deref().and_then(unix_millis_from_iso),
            cost_usd: rec.cost_usd,
            sidechain: rec.is_sidechain,
        };
        offer_usage(usage, row);
    }
    if let Some(a) = &rec.agent_usage {
        offer_usage(
            usage,
            UsageRow {
                message_id: a.message_id.clone(),
                session_id: session_id.to_string(),
                input_tokens: a.usage.input_tokens,
                output_tokens: a.usage.output_tokens,
                cache_creation_input_tokens: a.usage.cache_creation_input_tokens,
                cache_read_input_tokens: a.usage.cache_read_input_tokens,
                cache_creation_1h_tokens: a.usage.cache_creation_1h_tokens,
                model: a
                    .model
                    .clone()
                    .filter(|m| !m.is_empty() && m != "<synthetic>"),
                ts_ms: a.timestamp.as_deref().and_then(unix_millis_from_iso),
                cost_usd: None,
                // The carrying line's flag (a parent's line: main chain), as ccusage reads
                // it: its snapshot then wins over the sub-agent file's own line.
                sidechain: rec.is_sidechain,
            },
        );
    }
}

/// One row per message id: a later line of the same message replaces it when it wins.
fn offer_usage(usage: &mut HashMap<String, UsageRow>, row: UsageRow) {
    match usage.entry(row.message_id.clone()) {
        std::collections::hash_map::Entry::Occupied(mut e) => e.get_mut().offer(row),
        std::collections::hash_map::Entry::Vacant(e) => {
            e.insert(row);
        }
    }
}
