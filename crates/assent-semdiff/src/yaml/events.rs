//! A safe, pull-style reader of libyaml's event stream.
//!
//! `unsafe-libyaml` is a transliteration of C, so this is the one place in the crate that holds
//! `unsafe`: it owns the parser, copies out of each event what the tree builder needs (kind,
//! line, scalar text and style, tag) and frees the event before returning.

// The workspace denies `unsafe_code`; this module is its one exception (see above).
#![allow(unsafe_code)]

use std::ffi::{CStr, c_char};
use std::mem::MaybeUninit;
use std::ptr::NonNull;

use crate::lines::NewlineIndex;

/// The prefix libyaml expands `!!name` to.
const CORE_PREFIX: &[u8] = b"tag:yaml.org,2002:";

/// One event, with the parts the tree builder uses.
#[derive(Debug, Clone, PartialEq)]
pub(super) struct Event {
    pub(super) kind: EventKind,
    /// 1-based line where the event starts.
    pub(super) line: usize,
}

/// What an event is.
#[derive(Debug, Clone, PartialEq)]
pub(super) enum EventKind {
    StreamEnd,
    DocumentStart,
    Alias,
    Scalar {
        /// The scalar's content, escapes and folding already applied by libyaml.
        text: String,
        /// Whether it was written unquoted (only plain scalars are resolved to non-strings).
        plain: bool,
        tag: Tag,
    },
    SequenceStart(Tag),
    SequenceEnd,
    MappingStart(Tag),
    MappingEnd,
    /// Stream start, document end: nothing for the builder to do.
    Other,
}

/// A node's explicit tag, if it has one.
#[derive(Debug, Clone, PartialEq, Eq)]
pub(super) enum Tag {
    /// No tag written.
    None,
    /// A core-schema tag, `!!str` or `!<tag:yaml.org,2002:str>`: the part after the prefix.
    Core(String),
    /// Any other tag, in the form a user would recognise (`!secret`, a `%TAG`-expanded URI).
    Other(String),
}

impl Tag {
    /// How the tag reads in an error message.
    pub(super) fn display(&self) -> String {
        match self {
            Tag::None => String::new(),
            Tag::Core(name) => format!("!!{name}"),
            Tag::Other(tag) => tag.clone(),
        }
    }
}

/// Why libyaml stopped: its own problem text and position.
#[derive(Debug, Clone, PartialEq, Eq)]
pub(super) struct SyntaxError {
    /// 1-based line of the problem.
    pub(super) line: usize,
    /// The problem, followed by its context and the context's position when it has one
    /// (`did not find expected ',' or ']', while parsing a flow sequence at line 2 column 4`).
    pub(super) message: String,
}

/// A libyaml parser reading from a borrowed byte slice.
///
/// The parser struct is heap-allocated and never moves: libyaml keeps a pointer to it (as the
/// string reader's handler data) and to `input`, whose borrow `'a` outlives the parser.
pub(super) struct EventReader<'a> {
    raw: NonNull<unsafe_libyaml::yaml_parser_t>,
    /// Set once libyaml has failed or the stream has ended: it must not be driven further.
    finished: bool,
    lines: GitLines,
    input: &'a [u8],
}

impl<'a> EventReader<'a> {
    /// A reader over `input`, or `None` if libyaml could not allocate its parser.
    pub(super) fn new(input: &'a [u8]) -> Option<Self> {
        let boxed: Box<MaybeUninit<unsafe_libyaml::yaml_parser_t>> = Box::new_uninit();
        let raw = Box::into_raw(boxed).cast::<unsafe_libyaml::yaml_parser_t>();
        // SAFETY: `raw` points to writable, properly aligned memory for a `yaml_parser_t`;
        // `yaml_parser_initialize` zeroes and initialises it. On failure it has released what it
        // allocated, so only our box is freed. `input` outlives the parser (lifetime `'a`).
        unsafe {
            if unsafe_libyaml::yaml_parser_initialize(raw).fail {
                drop(Box::from_raw(
                    raw.cast::<MaybeUninit<unsafe_libyaml::yaml_parser_t>>(),
                ));
                return None;
            }
            unsafe_libyaml::yaml_parser_set_encoding(raw, unsafe_libyaml::YAML_UTF8_ENCODING);
            unsafe_libyaml::yaml_parser_set_input_string(raw, input.as_ptr(), input.len() as u64);
        }
        Some(EventReader {
            raw: NonNull::new(raw)?,
            finished: false,
            lines: GitLines::new(input),
            input,
        })
    }

    /// The next event. After a [`SyntaxError`] or [`EventKind::StreamEnd`] every further call
    /// returns `StreamEnd` again, without touching libyaml.
    pub(super) fn next_event(&mut self) -> Result<Event, SyntaxError> {
        if self.finished {
            return Ok(Event {
                kind: EventKind::StreamEnd,
                line: 1,
            });
        }
        let parser = self.raw.as_ptr();
        let mut event = MaybeUninit::<unsafe_libyaml::yaml_event_t>::uninit();
        // SAFETY: `parser` is initialised and owned by `self`, and has neither failed nor ended
        // (`finished` guards that: libyaml must not be driven past either). On success
        // `yaml_parser_parse` fully initialises `event`; we read the fields that belong to its
        // type (the union member named by `type_`), copy what we keep, and release the event's
        // allocations exactly once with `yaml_event_delete`. On failure no event was produced
        // and the parser's error fields are set.
        unsafe {
            if unsafe_libyaml::yaml_parser_parse(parser, event.as_mut_ptr()).fail {
                self.finished = true;
                return Err(self.syntax_error(&*parser));
            }
            let event = event.as_mut_ptr();
            let data = &(*event).data;
            let kind = match (*event).type_ {
                unsafe_libyaml::YAML_STREAM_END_EVENT => EventKind::StreamEnd,
                unsafe_libyaml::YAML_DOCUMENT_START_EVENT => EventKind::DocumentStart,
                unsafe_libyaml::YAML_ALIAS_EVENT => EventKind::Alias,
                unsafe_libyaml::YAML_SCALAR_EVENT => {
                    let scalar = &data.scalar;
                    let bytes = if scalar.value.is_null() {
                        &[][..]
                    } else {
                        std::slice::from_raw_parts(scalar.value, scalar.length as usize)
                    };
                    EventKind::Scalar {
                        // libyaml emits UTF-8 (it refuses escapes to surrogates); a lossy
                        // conversion is only a guard, never expected to change anything.
                        text: String::from_utf8_lossy(bytes).into_owned(),
                        plain: scalar.style == unsafe_libyaml::YAML_PLAIN_SCALAR_STYLE,
                        tag: tag_of(scalar.tag),
                    }
                }
                unsafe_libyaml::YAML_SEQUENCE_START_EVENT => {
                    EventKind::SequenceStart(tag_of(data.sequence_start.tag))
                }
                unsafe_libyaml::YAML_SEQUENCE_END_EVENT => EventKind::SequenceEnd,
                unsafe_libyaml::YAML_MAPPING_START_EVENT => {
                    EventKind::MappingStart(tag_of(data.mapping_start.tag))
                }
                unsafe_libyaml::YAML_MAPPING_END_EVENT => EventKind::MappingEnd,
                _ => EventKind::Other,
            };
            let line = self.lines.line_of((*event).start_mark);
            unsafe_libyaml::yaml_event_delete(event);
            if kind == EventKind::StreamEnd {
                self.finished = true;
            }
            Ok(Event { kind, line })
        }
    }
}

impl Drop for EventReader<'_> {
    fn drop(&mut self) {
        let raw = self.raw.as_ptr();
        // SAFETY: `raw` came from `Box::into_raw` in `new` and was initialised there; it is
        // released exactly once, here.
        unsafe {
            unsafe_libyaml::yaml_parser_delete(raw);
            drop(Box::from_raw(
                raw.cast::<MaybeUninit<unsafe_libyaml::yaml_parser_t>>(),
            ));
        }
    }
}

/// Reads a tag pointer from an event.
///
/// # Safety
/// `tag` is null or points to a NUL-terminated string that lives until the event is deleted.
unsafe fn tag_of(tag: *const u8) -> Tag {
    if tag.is_null() {
        return Tag::None;
    }
    // SAFETY: non-null, NUL-terminated, alive for the duration of this call (caller's contract).
    let bytes = unsafe { CStr::from_ptr(tag.cast::<c_char>()) }.to_bytes();
    match bytes.strip_prefix(CORE_PREFIX) {
        Some(name) => Tag::Core(String::from_utf8_lossy(name).into_owned()),
        None => Tag::Other(String::from_utf8_lossy(bytes).into_owned()),
    }
}

/// Lines as git counts them, from libyaml's positions.
///
/// libyaml starts a new line at each of YAML 1.1's line breaks: LF, CR, CRLF, U+0085, U+2028
/// and U+2029. Git, and so GitLab's diff positions, counts LF alone, so in a file that holds a
/// lone CR or one of those characters (in a comment or a quoted value, where YAML allows them)
/// libyaml's line would put a thread beside another line. There a position's line is counted
/// from its byte offset instead; elsewhere libyaml's count is git's (CRLF is one break to both),
/// and no index is built.
struct GitLines(Option<NewlineIndex>);

impl GitLines {
    fn new(input: &[u8]) -> Self {
        let other_breaks = input.iter().enumerate().any(|(i, &b)| match b {
            b'\r' => true,
            0xC2 => input.get(i + 1) == Some(&0x85),
            0xE2 => {
                input.get(i + 1) == Some(&0x80) && matches!(input.get(i + 2), Some(0xA8 | 0xA9))
            }
            _ => false,
        });
        GitLines(other_breaks.then(|| NewlineIndex::new(input)))
    }

    /// The 1-based line of a libyaml position.
    fn line_of(&self, mark: unsafe_libyaml::yaml_mark_t) -> usize {
        match &self.0 {
            // libyaml counts from 0.
            None => usize::try_from(mark.line).unwrap_or(usize::MAX - 1) + 1,
            Some(index) => index
                .line_of(usize::try_from(mark.index).unwrap_or(usize::MAX))
                .get()
                .unwrap_or(1),
        }
    }
}

impl EventReader<'_> {
    /// The parser's error, as text and line.
    fn syntax_error(&self, parser: &unsafe_libyaml::yaml_parser_t) -> SyntaxError {
        let text = |ptr: *const c_char| {
            // SAFETY: libyaml's problem and context are null or static NUL-terminated strings.
            (!ptr.is_null()).then(|| {
                unsafe { CStr::from_ptr(ptr) }
                    .to_string_lossy()
                    .into_owned()
            })
        };
        let problem = text(parser.problem).unwrap_or_else(|| "the YAML parser failed".to_owned());
        let mut message = problem;
        if let Some(context) = text(parser.context) {
            message.push_str(", ");
            message.push_str(&context);
            let (at, problem_at) = (parser.context_mark, parser.problem_mark);
            let known = at.line != 0 || at.column != 0;
            if known && (at.line, at.column) != (problem_at.line, problem_at.column) {
                message.push_str(&format!(
                    " at line {} column {}",
                    self.lines.line_of(at),
                    at.column + 1
                ));
            }
        }
        // A reader error (a byte YAML does not allow, such as U+000B) leaves the marks unset
        // and says where it is by byte offset.
        let line = if parser.error == unsafe_libyaml::YAML_READER_ERROR {
            let offset = usize::try_from(parser.problem_offset).unwrap_or(usize::MAX);
            let before = &self.input[..offset.min(self.input.len())];
            1 + before.iter().filter(|&&b| b == b'\n').count()
        } else {
            self.lines.line_of(parser.problem_mark)
        };
        SyntaxError { line, message }
    }
}
