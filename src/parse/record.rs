//! The top-level visitor of a transcript line: keys matched by hand, so unknown keys are kept
//! as data (listed in `unknown_fields`) instead of being lost or failing the line.

use serde::de::{Deserialize, Deserializer, IgnoredAny, MapAccess, Visitor};

use super::lenient::*;
use super::*;

/// Top-level keys that are known but deliberately not kept (so they are not reported as
/// unknown). Why listed: `unknown_fields` should flag format drift, not known noise.
const KNOWN_SKIPPED: &[&str] = &[
    "userType",
    "entrypoint",
    "isVisibleInTranscriptOnly",
    "thinkingMetadata",
    "todos",
    "planContent",
    "imagePasteIds",
    "error",
    "apiErrorStatus",
    "attributionAgent",
    "attributionSkill",
    "forkedFrom",
    "parentToolUseID",
    "messageId",
    "snapshot",
    "isSnapshotUpdate",
    "hookCount",
    "hookInfos",
    "hookErrors",
    "preventedContinuation",
    "stopReason",
    "hasOutput",
    "messageCount",
    "retryInMs",
    "retryAttempt",
    "maxRetries",
    "cause",
    "microcompactMetadata",
    "prNumber",
    "prRepository",
];

impl<'de> Deserialize<'de> for Record<'de> {
    fn deserialize<D: Deserializer<'de>>(d: D) -> Result<Self, D::Error> {
        d.deserialize_map(RecordVisitor)
    }
}

struct RecordVisitor;

impl<'de> Visitor<'de> for RecordVisitor {
    type Value = Record<'de>;

    fn expecting(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str("a JSON object")
    }

    fn visit_map<A: MapAccess<'de>>(self, mut map: A) -> Result<Record<'de>, A::Error> {
        let mut r = Record {
            kind: Kind::Other(Cow::Borrowed("")),
            type_name: Cow::Borrowed(""),
            subtype: None,
            uuid: None,
            parent_uuid: None,
            logical_parent_uuid: None,
            session_id: None,
            agent_id: None,
            timestamp: None,
            cwd: None,
            git_branch: None,
            version: None,
            slug: None,
            request_id: None,
            prompt_id: None,
            source_tool_use_id: None,
            source_tool_assistant_uuid: None,
            tool_use_id: None,
            is_sidechain: false,
            is_meta: false,
            is_compact_summary: false,
            is_api_error_message: false,
            message: None,
            summary: None,
            leaf_uuid: None,
            content: None,
            level: None,
            compact_metadata: None,
            duration_ms: None,
            cost_usd: None,
            tool_use_result: None,
            attachment_type: None,
            progress_type: None,
            agent_usage: None,
            operation: None,
            permission_mode: None,
            last_prompt: None,
            ai_title: None,
            custom_title: None,
            agent_name: None,
            pr_url: None,
            unknown_fields: Vec::new(),
        };
        while let Some(Key(key)) = map.next_key::<Key<'de>>()? {
            let slot = match key.as_ref() {
                "type" => {
                    r.type_name = map.next_value::<LStr<'de>>()?.0.unwrap_or_default();
                    continue;
                }
                "message" => {
                    r.message = map.next_value::<MessageObj<'de>>()?.0;
                    continue;
                }
                "isSidechain" => {
                    r.is_sidechain = map.next_value::<LBool>()?.0;
                    continue;
                }
                "isMeta" => {
                    r.is_meta = map.next_value::<LBool>()?.0;
                    continue;
                }
                "isCompactSummary" => {
                    r.is_compact_summary = map.next_value::<LBool>()?.0;
                    continue;
                }
                "isApiErrorMessage" => {
                    r.is_api_error_message = map.next_value::<LBool>()?.0;
                    continue;
                }
                "compactMetadata" => {
                    r.compact_metadata = map.next_value::<CompactMeta<'de>>()?.0;
                    continue;
                }
                "durationMs" => {
                    r.duration_ms = map.next_value::<LI64>()?.0;
                    continue;
                }
                "costUSD" => {
                    // Any JSON value reads; only a finite number is a cost.
                    r.cost_usd = map
                        .next_value::<serde_json::Value>()?
                        .as_f64()
                        .filter(|c| c.is_finite());
                    continue;
                }
                "toolUseResult" => {
                    r.tool_use_result = Some(map.next_value::<&'de RawValue>()?);
                    continue;
                }
                "attachment" => {
                    r.attachment_type = map.next_value::<TypeOnly<'de>>()?.0.flatten();
                    continue;
                }
                "data" => {
                    if let Some((t, usage)) = map.next_value::<ProgressData<'de>>()?.0 {
                        r.progress_type = t;
                        r.agent_usage = usage;
                    }
                    continue;
                }
                "subtype" => &mut r.subtype,
                "uuid" => &mut r.uuid,
                "parentUuid" => &mut r.parent_uuid,
                "logicalParentUuid" => &mut r.logical_parent_uuid,
                "sessionId" => &mut r.session_id,
                "agentId" => &mut r.agent_id,
                "timestamp" => &mut r.timestamp,
                "cwd" => &mut r.cwd,
                "gitBranch" => &mut r.git_branch,
                "version" => &mut r.version,
                "slug" => &mut r.slug,
                "requestId" => &mut r.request_id,
                "promptId" => &mut r.prompt_id,
                "sourceToolUseID" => &mut r.source_tool_use_id,
                "sourceToolAssistantUUID" => &mut r.source_tool_assistant_uuid,
                "toolUseID" => &mut r.tool_use_id,
                "summary" => &mut r.summary,
                "leafUuid" => &mut r.leaf_uuid,
                "content" => &mut r.content,
                "level" => &mut r.level,
                "operation" => &mut r.operation,
                "permissionMode" => &mut r.permission_mode,
                "lastPrompt" => &mut r.last_prompt,
                "aiTitle" => &mut r.ai_title,
                "customTitle" => &mut r.custom_title,
                "agentName" => &mut r.agent_name,
                "prUrl" => &mut r.pr_url,
                k => {
                    if !KNOWN_SKIPPED.contains(&k) {
                        r.unknown_fields.push(key);
                    }
                    map.next_value::<IgnoredAny>()?;
                    continue;
                }
            };
            *slot = map.next_value::<LStr<'de>>()?.0;
        }
        r.kind = Kind::from_name(&r.type_name);
        Ok(r)
    }
}
