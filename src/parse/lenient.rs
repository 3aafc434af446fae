//! Lenient serde building blocks for [`super::parse_line`].
//!
//! Why a module of its own: these types never error on a type mismatch (a surprising field
//! reads as absent), which is what lets the record visitor promise that a well-formed JSON line
//! is never lost, and they are the bulk of the parser's code.

use std::borrow::Cow;

use serde::de::{self, Deserialize, Deserializer, IgnoredAny, MapAccess, SeqAccess, Visitor};
use serde_json::value::RawValue;
use std::fmt;

use super::*;

/// A string that borrows when it can; any non-string JSON value reads as `None`.
pub(super) struct LStr<'a>(pub(super) Option<Cow<'a, str>>);

pub(super) struct LStrVisitor;

impl<'de> Visitor<'de> for LStrVisitor {
    type Value = LStr<'de>;
    fn expecting(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str("any JSON value")
    }
    fn visit_borrowed_str<E: de::Error>(self, v: &'de str) -> Result<Self::Value, E> {
        Ok(LStr(Some(Cow::Borrowed(v))))
    }
    fn visit_str<E: de::Error>(self, v: &str) -> Result<Self::Value, E> {
        Ok(LStr(Some(Cow::Owned(v.to_owned()))))
    }
    fn visit_string<E: de::Error>(self, v: String) -> Result<Self::Value, E> {
        Ok(LStr(Some(Cow::Owned(v))))
    }
    fn visit_bool<E: de::Error>(self, _: bool) -> Result<Self::Value, E> {
        Ok(LStr(None))
    }
    fn visit_i64<E: de::Error>(self, _: i64) -> Result<Self::Value, E> {
        Ok(LStr(None))
    }
    fn visit_u64<E: de::Error>(self, _: u64) -> Result<Self::Value, E> {
        Ok(LStr(None))
    }
    fn visit_f64<E: de::Error>(self, _: f64) -> Result<Self::Value, E> {
        Ok(LStr(None))
    }
    fn visit_unit<E: de::Error>(self) -> Result<Self::Value, E> {
        Ok(LStr(None))
    }
    fn visit_none<E: de::Error>(self) -> Result<Self::Value, E> {
        Ok(LStr(None))
    }
    fn visit_seq<A: SeqAccess<'de>>(self, mut seq: A) -> Result<Self::Value, A::Error> {
        while seq.next_element::<IgnoredAny>()?.is_some() {}
        Ok(LStr(None))
    }
    fn visit_map<A: MapAccess<'de>>(self, mut map: A) -> Result<Self::Value, A::Error> {
        while map.next_entry::<IgnoredAny, IgnoredAny>()?.is_some() {}
        Ok(LStr(None))
    }
}

impl<'de> Deserialize<'de> for LStr<'de> {
    fn deserialize<D: Deserializer<'de>>(d: D) -> Result<Self, D::Error> {
        d.deserialize_any(LStrVisitor)
    }
}

/// Object keys: borrowed unless escaped (keys are strings in JSON, so no leniency needed).
pub(super) struct Key<'a>(pub(super) Cow<'a, str>);

impl<'de> Deserialize<'de> for Key<'de> {
    fn deserialize<D: Deserializer<'de>>(d: D) -> Result<Self, D::Error> {
        match d.deserialize_str(LStrVisitor)?.0 {
            Some(k) => Ok(Key(k)),
            None => Ok(Key(Cow::Borrowed(""))),
        }
    }
}

/// A bool; anything else reads as `false`.
pub(super) struct LBool(pub(super) bool);

impl<'de> Deserialize<'de> for LBool {
    fn deserialize<D: Deserializer<'de>>(d: D) -> Result<Self, D::Error> {
        struct V;
        impl<'de> Visitor<'de> for V {
            type Value = LBool;
            fn expecting(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
                f.write_str("any JSON value")
            }
            fn visit_bool<E: de::Error>(self, v: bool) -> Result<LBool, E> {
                Ok(LBool(v))
            }
            fn visit_i64<E: de::Error>(self, _: i64) -> Result<LBool, E> {
                Ok(LBool(false))
            }
            fn visit_u64<E: de::Error>(self, _: u64) -> Result<LBool, E> {
                Ok(LBool(false))
            }
            fn visit_f64<E: de::Error>(self, _: f64) -> Result<LBool, E> {
                Ok(LBool(false))
            }
            fn visit_str<E: de::Error>(self, _: &str) -> Result<LBool, E> {
                Ok(LBool(false))
            }
            fn visit_unit<E: de::Error>(self) -> Result<LBool, E> {
                Ok(LBool(false))
            }
            fn visit_none<E: de::Error>(self) -> Result<LBool, E> {
                Ok(LBool(false))
            }
            fn visit_seq<A: SeqAccess<'de>>(self, mut seq: A) -> Result<LBool, A::Error> {
                while seq.next_element::<IgnoredAny>()?.is_some() {}
                Ok(LBool(false))
            }
            fn visit_map<A: MapAccess<'de>>(self, mut map: A) -> Result<LBool, A::Error> {
                while map.next_entry::<IgnoredAny, IgnoredAny>()?.is_some() {}
                Ok(LBool(false))
            }
        }
        d.deserialize_any(V)
    }
}

/// An integer (floats truncated, huge values saturated); anything else reads as `None`.
pub(super) struct LI64(pub(super) Option<i64>);

impl<'de> Deserialize<'de> for LI64 {
    fn deserialize<D: Deserializer<'de>>(d: D) -> Result<Self, D::Error> {
        struct V;
        impl<'de> Visitor<'de> for V {
            type Value = LI64;
            fn expecting(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
                f.write_str("any JSON value")
            }
            fn visit_bool<E: de::Error>(self, _: bool) -> Result<LI64, E> {
                Ok(LI64(None))
            }
            fn visit_i64<E: de::Error>(self, v: i64) -> Result<LI64, E> {
                Ok(LI64(Some(v)))
            }
            fn visit_u64<E: de::Error>(self, v: u64) -> Result<LI64, E> {
                Ok(LI64(Some(i64::try_from(v).unwrap_or(i64::MAX))))
            }
            fn visit_f64<E: de::Error>(self, v: f64) -> Result<LI64, E> {
                // `as` saturates and maps NaN to 0, which is what we want for a counter.
                Ok(LI64(Some(v as i64)))
            }
            fn visit_str<E: de::Error>(self, _: &str) -> Result<LI64, E> {
                Ok(LI64(None))
            }
            fn visit_unit<E: de::Error>(self) -> Result<LI64, E> {
                Ok(LI64(None))
            }
            fn visit_none<E: de::Error>(self) -> Result<LI64, E> {
                Ok(LI64(None))
            }
            fn visit_seq<A: SeqAccess<'de>>(self, mut seq: A) -> Result<LI64, A::Error> {
                while seq.next_element::<IgnoredAny>()?.is_some() {}
                Ok(LI64(None))
            }
            fn visit_map<A: MapAccess<'de>>(self, mut map: A) -> Result<LI64, A::Error> {
                while map.next_entry::<IgnoredAny, IgnoredAny>()?.is_some() {}
                Ok(LI64(None))
            }
        }
        d.deserialize_any(V)
    }
}

/// Implements the non-map arms of a lenient "object or nothing" visitor: any other JSON type
/// reads as `None` (skipped without allocating).
macro_rules! non_map_is_none {
    () => {
        fn visit_bool<E: de::Error>(self, _: bool) -> Result<Self::Value, E> {
            Ok(None)
        }
        fn visit_i64<E: de::Error>(self, _: i64) -> Result<Self::Value, E> {
            Ok(None)
        }
        fn visit_u64<E: de::Error>(self, _: u64) -> Result<Self::Value, E> {
            Ok(None)
        }
        fn visit_f64<E: de::Error>(self, _: f64) -> Result<Self::Value, E> {
            Ok(None)
        }
        fn visit_str<E: de::Error>(self, _: &str) -> Result<Self::Value, E> {
            Ok(None)
        }
        fn visit_unit<E: de::Error>(self) -> Result<Self::Value, E> {
            Ok(None)
        }
        fn visit_none<E: de::Error>(self) -> Result<Self::Value, E> {
            Ok(None)
        }
        fn visit_seq<A: SeqAccess<'de>>(self, mut seq: A) -> Result<Self::Value, A::Error> {
            while seq.next_element::<IgnoredAny>()?.is_some() {}
            Ok(None)
        }
    };
}

/// Deserializes `Option<T>` from "an object, or anything else → None" with a map visitor.
macro_rules! lenient_object {
    ($wrapper:ident, $value:ty, |$map:ident| $body:block) => {
        pub(super) struct $wrapper<'de>(
            pub(super) Option<$value>,
            std::marker::PhantomData<&'de ()>,
        );
        impl<'de> Deserialize<'de> for $wrapper<'de> {
            fn deserialize<D: Deserializer<'de>>(d: D) -> Result<Self, D::Error> {
                struct V;
                impl<'de> Visitor<'de> for V {
                    type Value = Option<$value>;
                    fn expecting(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
                        f.write_str("any JSON value")
                    }
                    non_map_is_none!();
                    fn visit_map<A: MapAccess<'de>>(
                        self,
                        mut $map: A,
                    ) -> Result<Self::Value, A::Error> {
                        $body
                    }
                }
                Ok($wrapper(d.deserialize_any(V)?, std::marker::PhantomData))
            }
        }
    };
}

// `{"agentId": …}` out of a `toolUseResult`.
lenient_object!(AgentIdOnlyObj, Option<Cow<'de, str>>, |map| {
    let mut id = None;
    while let Some(k) = map.next_key::<Key<'de>>()? {
        if k.0 == "agentId" {
            id = map.next_value::<LStr<'de>>()?.0;
        } else {
            map.next_value::<IgnoredAny>()?;
        }
    }
    Ok(Some(id))
});

pub(super) struct AgentIdOnly<'a>(pub(super) Option<Cow<'a, str>>);

impl<'de> Deserialize<'de> for AgentIdOnly<'de> {
    fn deserialize<D: Deserializer<'de>>(d: D) -> Result<Self, D::Error> {
        Ok(AgentIdOnly(AgentIdOnlyObj::deserialize(d)?.0.flatten()))
    }
}

// `{"type": …}` out of `attachment` / progress `data`, skipping the (possibly huge) rest.
lenient_object!(TypeOnly, Option<Cow<'de, str>>, |map| {
    let mut t = None;
    while let Some(k) = map.next_key::<Key<'de>>()? {
        if k.0 == "type" {
            t = map.next_value::<LStr<'de>>()?.0;
        } else {
            map.next_value::<IgnoredAny>()?;
        }
    }
    Ok(Some(t))
});

// Progress `data`: its `type` and, for an `agent_progress` line, the usage of the sub-agent's
// message it carries (`data.message.message`), everything else skipped.
lenient_object!(
    ProgressData,
    (Option<Cow<'de, str>>, Option<AgentUsage>),
    |map| {
        let mut t = None;
        let mut usage = None;
        while let Some(k) = map.next_key::<Key<'de>>()? {
            match k.0.as_ref() {
                "type" => t = map.next_value::<LStr<'de>>()?.0,
                "message" => usage = map.next_value::<AgentLine<'de>>()?.0.flatten(),
                _ => {
                    map.next_value::<IgnoredAny>()?;
                }
            }
        }
        Ok(Some((t, usage)))
    }
);

// The sub-agent line inside a progress line: `{timestamp, requestId, message: {id, model, usage}}`.
lenient_object!(AgentLine, Option<AgentUsage>, |map| {
    let (mut ts, mut req, mut msg) = (None, None, None);
    while let Some(k) = map.next_key::<Key<'de>>()? {
        match k.0.as_ref() {
            "timestamp" => ts = map.next_value::<LStr<'de>>()?.0,
            "requestId" => req = map.next_value::<LStr<'de>>()?.0,
            "message" => msg = map.next_value::<UsageMessage<'de>>()?.0,
            _ => {
                map.next_value::<IgnoredAny>()?;
            }
        }
    }
    let usage = msg.and_then(
        |(id, model, usage): (Option<Cow<'de, str>>, _, Option<Usage>)| {
            Some(AgentUsage {
                message_id: id?.into_owned(),
                model: model.map(Cow::into_owned),
                usage: usage?,
                request_id: req.map(Cow::into_owned),
                timestamp: ts.map(Cow::into_owned),
            })
        },
    );
    Ok(Some(usage))
});

// `{id, model, usage}` of a message, its content skipped.
lenient_object!(
    UsageMessage,
    (Option<Cow<'de, str>>, Option<Cow<'de, str>>, Option<Usage>),
    |map| {
        let (mut id, mut model, mut usage) = (None, None, None);
        while let Some(k) = map.next_key::<Key<'de>>()? {
            match k.0.as_ref() {
                "id" => id = map.next_value::<LStr<'de>>()?.0,
                "model" => model = map.next_value::<LStr<'de>>()?.0,
                "usage" => usage = map.next_value::<UsageObj<'de>>()?.0,
                _ => {
                    map.next_value::<IgnoredAny>()?;
                }
            }
        }
        Ok(Some((id, model, usage)))
    }
);

lenient_object!(CompactMeta, CompactMetadata, |map| {
    let mut m = CompactMetadata::default();
    while let Some(k) = map.next_key::<Key<'de>>()? {
        match k.0.as_ref() {
            "trigger" => m.trigger = map.next_value::<LStr<'de>>()?.0.map(Cow::into_owned),
            "preTokens" => m.pre_tokens = map.next_value::<LI64>()?.0,
            _ => {
                map.next_value::<IgnoredAny>()?;
            }
        }
    }
    Ok(Some(m))
});

// `usage.cache_creation`: only its one-hour part is kept (the rest is the 5-minute part).
lenient_object!(CacheCreation, i64, |map| {
    let mut h = 0;
    while let Some(k) = map.next_key::<Key<'de>>()? {
        if k.0 == "ephemeral_1h_input_tokens" {
            h = map.next_value::<LI64>()?.0.unwrap_or(0);
        } else {
            map.next_value::<IgnoredAny>()?;
        }
    }
    Ok(Some(h))
});

lenient_object!(UsageObj, Usage, |map| {
    let mut u = Usage::default();
    while let Some(k) = map.next_key::<Key<'de>>()? {
        let slot = match k.0.as_ref() {
            "input_tokens" => &mut u.input_tokens,
            "output_tokens" => &mut u.output_tokens,
            "cache_creation_input_tokens" => &mut u.cache_creation_input_tokens,
            "cache_read_input_tokens" => &mut u.cache_read_input_tokens,
            "cache_creation" => {
                u.cache_creation_1h_tokens = map.next_value::<CacheCreation>()?.0.unwrap_or(0);
                continue;
            }
            _ => {
                map.next_value::<IgnoredAny>()?;
                continue;
            }
        };
        *slot = map.next_value::<LI64>()?.0.unwrap_or(0);
    }
    Ok(Some(u))
});

/// Input keys that name a tool's target, in priority order (`skill`: the Skill tool's only
/// input, the skill it launched). The one list: the exports name a call's target by it too.
pub const TARGET_KEYS: [&str; 9] = [
    "file_path",
    "notebook_path",
    "command",
    "url",
    "pattern",
    "path",
    "query",
    "skill",
    "description",
];

// Tool input reduced to its target and, for editing tools, the raw text of what they change;
// every other input field is skipped.
lenient_object!(ToolTarget, (Option<Cow<'de, str>>, EditInput<'de>), |map| {
    let mut best: Option<(usize, Cow<'de, str>)> = None;
    let mut edit = EditInput::default();
    while let Some(k) = map.next_key::<Key<'de>>()? {
        let slot = match k.0.as_ref() {
            "old_string" => Some(&mut edit.old),
            "new_string" => Some(&mut edit.new),
            "edits" => Some(&mut edit.edits),
            "content" => Some(&mut edit.content),
            _ => None,
        };
        if let Some(slot) = slot {
            *slot = Some(map.next_value::<&'de RawValue>()?);
            continue;
        }
        let rank = TARGET_KEYS.iter().position(|t| *t == k.0);
        match rank {
            Some(r) if best.as_ref().is_none_or(|(b, _)| r < *b) => {
                if let Some(v) = map.next_value::<LStr<'de>>()?.0 {
                    best = Some((r, v));
                }
            }
            _ => {
                map.next_value::<IgnoredAny>()?;
            }
        }
    }
    Ok(Some((best.map(|(_, v)| truncate(v, MAX_TARGET_LEN)), edit)))
});

pub(super) fn truncate(s: Cow<'_, str>, max: usize) -> Cow<'_, str> {
    if s.len() <= max {
        return s;
    }
    let mut end = max;
    while !s.is_char_boundary(end) {
        end -= 1;
    }
    match s {
        Cow::Borrowed(b) => Cow::Borrowed(&b[..end]),
        Cow::Owned(mut o) => {
            o.truncate(end);
            Cow::Owned(o)
        }
    }
}

// A content block; `type` may come after the other keys, so fields are collected first.
lenient_object!(BlockObj, Block<'de>, |map| {
    let mut ty: Option<Cow<'de, str>> = None;
    let mut text = None;
    let mut id = None;
    let mut name = None;
    let mut target = None;
    let mut edit = EditInput::default();
    let mut tool_use_id = None;
    let mut is_error = false;
    let mut content: Option<&'de RawValue> = None;
    while let Some(k) = map.next_key::<Key<'de>>()? {
        match k.0.as_ref() {
            "type" => ty = map.next_value::<LStr<'de>>()?.0,
            "text" => text = map.next_value::<LStr<'de>>()?.0,
            "id" => id = map.next_value::<LStr<'de>>()?.0,
            "name" => name = map.next_value::<LStr<'de>>()?.0,
            "input" => {
                if let Some((t, e)) = map.next_value::<ToolTarget<'de>>()?.0 {
                    target = t;
                    edit = e;
                }
            }
            "tool_use_id" => tool_use_id = map.next_value::<LStr<'de>>()?.0,
            "is_error" => is_error = map.next_value::<LBool>()?.0,
            "content" => content = Some(map.next_value::<&'de RawValue>()?),
            _ => {
                map.next_value::<IgnoredAny>()?;
            }
        }
    }
    let ty = ty.unwrap_or(Cow::Borrowed(""));
    Ok(Some(match ty.as_ref() {
        "text" => Block::Text(text.unwrap_or_default()),
        "tool_use" => Block::ToolUse {
            id: id.unwrap_or_default(),
            name: name.unwrap_or_default(),
            target,
            edit,
        },
        "tool_result" => Block::ToolResult {
            tool_use_id: tool_use_id.unwrap_or_default(),
            is_error,
            content,
        },
        "thinking" | "redacted_thinking" => Block::Thinking,
        "image" => Block::Image,
        "document" => Block::Document,
        _ => Block::Other(ty),
    }))
});

/// String-or-array content; used for `message.content` and tool result content.
pub(super) struct ContentField<'a>(pub(super) Content<'a>);

impl<'de> Deserialize<'de> for ContentField<'de> {
    fn deserialize<D: Deserializer<'de>>(d: D) -> Result<Self, D::Error> {
        struct V;
        impl<'de> Visitor<'de> for V {
            type Value = Content<'de>;
            fn expecting(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
                f.write_str("any JSON value")
            }
            fn visit_borrowed_str<E: de::Error>(self, v: &'de str) -> Result<Content<'de>, E> {
                Ok(Content::Text(Cow::Borrowed(v)))
            }
            fn visit_str<E: de::Error>(self, v: &str) -> Result<Content<'de>, E> {
                Ok(Content::Text(Cow::Owned(v.to_owned())))
            }
            fn visit_string<E: de::Error>(self, v: String) -> Result<Content<'de>, E> {
                Ok(Content::Text(Cow::Owned(v)))
            }
            fn visit_bool<E: de::Error>(self, _: bool) -> Result<Content<'de>, E> {
                Ok(Content::None)
            }
            fn visit_i64<E: de::Error>(self, _: i64) -> Result<Content<'de>, E> {
                Ok(Content::None)
            }
            fn visit_u64<E: de::Error>(self, _: u64) -> Result<Content<'de>, E> {
                Ok(Content::None)
            }
            fn visit_f64<E: de::Error>(self, _: f64) -> Result<Content<'de>, E> {
                Ok(Content::None)
            }
            fn visit_unit<E: de::Error>(self) -> Result<Content<'de>, E> {
                Ok(Content::None)
            }
            fn visit_none<E: de::Error>(self) -> Result<Content<'de>, E> {
                Ok(Content::None)
            }
            fn visit_seq<A: SeqAccess<'de>>(self, mut seq: A) -> Result<Content<'de>, A::Error> {
                let mut blocks = Vec::with_capacity(seq.size_hint().unwrap_or(1).min(16));
                while let Some(b) = seq.next_element::<BlockObj<'de>>()? {
                    // Non-object array elements are not blocks; skip them.
                    if let Some(b) = b.0 {
                        blocks.push(b);
                    }
                }
                Ok(Content::Blocks(blocks))
            }
            fn visit_map<A: MapAccess<'de>>(self, mut map: A) -> Result<Content<'de>, A::Error> {
                while map.next_entry::<IgnoredAny, IgnoredAny>()?.is_some() {}
                Ok(Content::None)
            }
        }
        Ok(ContentField(d.deserialize_any(V)?))
    }
}

lenient_object!(MessageObj, Message<'de>, |map| {
    let mut m = Message::default();
    while let Some(k) = map.next_key::<Key<'de>>()? {
        match k.0.as_ref() {
            "id" => m.id = map.next_value::<LStr<'de>>()?.0,
            "role" => m.role = map.next_value::<LStr<'de>>()?.0,
            "model" => m.model = map.next_value::<LStr<'de>>()?.0,
            "content" => m.content = map.next_value::<ContentField<'de>>()?.0,
            "stop_reason" => m.stop_reason = map.next_value::<LStr<'de>>()?.0,
            "usage" => m.usage = map.next_value::<UsageObj<'de>>()?.0,
            _ => {
                map.next_value::<IgnoredAny>()?;
            }
        }
    }
    Ok(Some(m))
});
