//! A pre-scan of the YAML event stream, before `serde_yaml` builds anything.
//!
//! `serde_yaml` resolves aliases transparently and buffers every event of a document before
//! deserializing, so some refusals can only be made soundly, and cheaply, on the raw event
//! stream: an alias anywhere (refused at its first occurrence, so an alias bomb costs one event),
//! a second document, nesting deeper than the limit (checked iteratively: a 10,000-deep document
//! is refused without recursion), too many values, and lists or maps used as keys.
//!
//! The events come from `unsafe-libyaml`, the same parser `serde_yaml` runs, so the two passes
//! cannot disagree about the text. Its API is a transliteration of C, hence the small `unsafe`
//! wrapper below; it is the only `unsafe` in this module. A syntax error ends the scan quietly:
//! `serde_yaml` then reports the same error with its usual message and location.

use std::marker::PhantomData;
use std::mem::MaybeUninit;
use std::ptr::NonNull;

use super::build;

/// Why the pre-scan refused a document.
#[derive(Debug, Clone, PartialEq, Eq)]
pub(super) struct ScanError {
    /// 1-based line of the offending event.
    pub(super) line: usize,
    pub(super) message: String,
}

/// Checks the event stream of `input` against the YAML-only rules and the depth and node limits.
pub(super) fn prescan(input: &[u8], max_depth: usize, max_nodes: usize) -> Result<(), ScanError> {
    enum Frame {
        Seq,
        Map { next_is_key: bool },
    }
    let Some(mut parser) = EventParser::new(input) else {
        return Err(ScanError {
            line: 1,
            message: "the YAML parser could not be initialised".to_owned(),
        });
    };
    let mut stack: Vec<Frame> = Vec::new();
    let mut documents = 0usize;
    let mut nodes = 0usize;
    let fail = |line: usize, message: String| Err(ScanError { line, message });
    loop {
        let Some((kind, line)) = parser.next() else {
            return Ok(()); // syntax error: serde_yaml reports it
        };
        match kind {
            Kind::StreamEnd => return Ok(()),
            Kind::DocumentStart => {
                documents += 1;
                if documents > 1 {
                    return fail(
                        line,
                        "a governed YAML file must hold exactly one document, found a second"
                            .to_owned(),
                    );
                }
            }
            Kind::Alias => {
                return fail(
                    line,
                    "YAML aliases are not supported in governed files".to_owned(),
                );
            }
            Kind::Scalar | Kind::SequenceStart | Kind::MappingStart => {
                let is_key = match stack.last_mut() {
                    Some(Frame::Map { next_is_key }) => {
                        let was_key = *next_is_key;
                        *next_is_key = !was_key;
                        was_key
                    }
                    _ => false,
                };
                if is_key {
                    match kind {
                        Kind::SequenceStart => return fail(line, build::LIST_KEY.to_owned()),
                        Kind::MappingStart => return fail(line, build::MAP_KEY.to_owned()),
                        _ => {}
                    }
                } else {
                    nodes += 1;
                    if nodes > max_nodes {
                        return fail(line, build::too_many_nodes(max_nodes));
                    }
                }
                let frame = match kind {
                    Kind::SequenceStart => Frame::Seq,
                    Kind::MappingStart => Frame::Map { next_is_key: true },
                    _ => continue,
                };
                if stack.len() + 1 > max_depth {
                    return fail(line, build::too_deep(max_depth));
                }
                stack.push(frame);
            }
            Kind::SequenceEnd | Kind::MappingEnd => {
                stack.pop();
            }
            Kind::Other => {}
        }
    }
}

/// The event kinds the scan distinguishes.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
enum Kind {
    StreamEnd,
    DocumentStart,
    Alias,
    Scalar,
    SequenceStart,
    SequenceEnd,
    MappingStart,
    MappingEnd,
    Other,
}

/// A libyaml parser reading from a borrowed byte slice.
///
/// The parser struct is heap-allocated and never moves: libyaml keeps a pointer to it (as the
/// string reader's handler data) and to `input`, whose borrow `'a` outlives the parser.
struct EventParser<'a> {
    raw: NonNull<unsafe_libyaml::yaml_parser_t>,
    failed: bool,
    _input: PhantomData<&'a [u8]>,
}

impl<'a> EventParser<'a> {
    fn new(input: &'a [u8]) -> Option<Self> {
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
        Some(EventParser {
            raw: NonNull::new(raw)?,
            failed: false,
            _input: PhantomData,
        })
    }

    /// The next event's kind and 1-based line, or `None` once the parser has failed.
    fn next(&mut self) -> Option<(Kind, usize)> {
        if self.failed {
            return None;
        }
        let parser = self.raw.as_ptr();
        let mut event = MaybeUninit::<unsafe_libyaml::yaml_event_t>::uninit();
        // SAFETY: `parser` is initialised and owned by `self`, and has not failed before (libyaml
        // must not be driven past an error; `failed` guards that). `yaml_parser_parse` fully
        // initialises `event` when it succeeds; we read two plain fields and then release the
        // event's allocations exactly once with `yaml_event_delete`.
        unsafe {
            if unsafe_libyaml::yaml_parser_parse(parser, event.as_mut_ptr()).fail {
                self.failed = true;
                return None;
            }
            let event = event.as_mut_ptr();
            let kind = match (*event).type_ {
                unsafe_libyaml::YAML_STREAM_END_EVENT => Kind::StreamEnd,
                unsafe_libyaml::YAML_DOCUMENT_START_EVENT => Kind::DocumentStart,
                unsafe_libyaml::YAML_ALIAS_EVENT => Kind::Alias,
                unsafe_libyaml::YAML_SCALAR_EVENT => Kind::Scalar,
                unsafe_libyaml::YAML_SEQUENCE_START_EVENT => Kind::SequenceStart,
                unsafe_libyaml::YAML_SEQUENCE_END_EVENT => Kind::SequenceEnd,
                unsafe_libyaml::YAML_MAPPING_START_EVENT => Kind::MappingStart,
                unsafe_libyaml::YAML_MAPPING_END_EVENT => Kind::MappingEnd,
                _ => Kind::Other,
            };
            let line = usize::try_from((*event).start_mark.line).unwrap_or(usize::MAX - 1) + 1;
            unsafe_libyaml::yaml_event_delete(event);
            Some((kind, line))
        }
    }
}

impl Drop for EventParser<'_> {
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

#[cfg(test)]
mod tests {
    use super::*;

    fn scan(text: &str) -> Result<(), ScanError> {
        prescan(text.as_bytes(), 128, 1_000_000)
    }

    #[test]
    fn plain_documents_pass() {
        assert_eq!(scan(""), Ok(()));
        assert_eq!(scan("a: 1\nb: [x, {c: d}]\n"), Ok(()));
        assert_eq!(scan("---\nanchor: &a 1\n...\n"), Ok(()));
    }

    #[test]
    fn refuses_alias_second_document_and_complex_keys_with_line() {
        let alias = scan("a: &x 1\nb: *x\n").unwrap_err();
        assert_eq!(
            (alias.line, alias.message.as_str()),
            (2, "YAML aliases are not supported in governed files")
        );
        assert_eq!(scan("a: 1\n---\nb: 2\n").unwrap_err().line, 2);
        assert_eq!(
            scan("x:\n  ? [a, b]\n  : 1\n").unwrap_err().message,
            build::LIST_KEY
        );
        assert_eq!(scan("{a: 1}: 2\n").unwrap_err().message, build::MAP_KEY);
    }

    #[test]
    fn syntax_errors_are_left_to_serde_yaml() {
        assert_eq!(scan("a: [1, 2\n"), Ok(()));
    }

    #[test]
    fn counts_values_not_keys_and_depth_iteratively() {
        assert_eq!(prescan(b"{a: 1, b: 2}", 128, 3), Ok(()));
        assert_eq!(
            prescan(b"{a: 1, b: 2}", 128, 2).unwrap_err().message,
            build::too_many_nodes(2)
        );
        assert_eq!(prescan(b"[[[]]]", 3, 100), Ok(()));
        assert_eq!(
            prescan(b"[[[]]]", 2, 100).unwrap_err().message,
            build::too_deep(2)
        );
        let deep = "[".repeat(10_000) + &"]".repeat(10_000);
        assert_eq!(
            prescan(deep.as_bytes(), 128, 1_000_000)
                .unwrap_err()
                .message,
            build::too_deep(128)
        );
    }
}
