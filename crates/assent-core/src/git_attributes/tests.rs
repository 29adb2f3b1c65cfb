use globset::GlobBuilder;
use proptest::prelude::*;

use super::*;

const GLOBS: &[&str] = &["topics/*.yaml", "clusters/**/topics.yaml"];

fn change<'a>(
    path: &'a str,
    base: Option<&'a str>,
    source: Option<&'a str>,
) -> AttributesChange<'a> {
    let side = |text: Option<&'a str>| match text {
        Some(text) => SideContent::Present(text.as_bytes()),
        None => SideContent::Absent,
    };
    AttributesChange {
        path,
        base: side(base),
        source: side(source),
    }
}

fn details(finding: &Finding) -> String {
    finding.message.clone()
}

#[test]
fn an_added_export_ignore_of_a_governed_file_is_a_challenge_naming_attribute_and_glob() {
    let findings = judge(
        &[change(
            ".gitattributes",
            Some("*.png binary\n"),
            Some("*.png binary\ntopics/orders.yaml export-ignore\n"),
        )],
        GLOBS,
    );
    assert_eq!(findings.len(), 1, "{findings:?}");
    let finding = &findings[0];
    assert_eq!(finding.slot.rule, RULE_GIT_ATTRIBUTES);
    assert_eq!(finding.slot.subject, ".gitattributes#");
    assert_eq!(finding.effect, FindingEffect::Challenge);
    let message = details(finding);
    assert!(message.contains("`export-ignore`"), "{message}");
    assert!(message.contains("`topics/*.yaml`"), "{message}");
    assert!(message.contains("`git archive`"), "{message}");
    assert!(!message.contains("clusters"), "{message}");
}

#[test]
fn every_attribute_that_changes_content_or_review_counts_and_others_do_not() {
    for line in [
        "topics/*.yaml export-subst",
        "topics/*.yaml filter=lfs",
        "topics/*.yaml text",
        "topics/*.yaml -text",
        "topics/*.yaml !text",
        "topics/*.yaml eol=crlf",
        "topics/*.yaml crlf",
        "topics/*.yaml working-tree-encoding=UTF-16",
        "topics/*.yaml ident",
        "topics/*.yaml -diff",
        "topics/*.yaml diff=yaml",
        "topics/*.yaml binary",
        "topics/*.yaml linguist-generated",
        "topics/*.yaml gitlab-generated=true",
        "*.yaml export-ignore",
        "topics export-ignore",
        "topics/ export-ignore",
        "/topics/** -diff",
        "**/topics.yaml text",
        "\"topics/orders.yaml\" export-ignore",
        "TOPICS/orders.yaml export-ignore",
    ] {
        let source = format!("{line}\n");
        let findings = judge(&[change(".gitattributes", None, Some(&source))], GLOBS);
        assert_eq!(findings.len(), 1, "{line} must count");
    }
    for line in [
        "topics/*.yaml linguist-language=YAML",
        "topics/*.yaml merge=union whitespace=-trailing",
        "docs/*.md export-ignore",
        "*.png binary",
        "topics/ -diff",
        "topics -diff",
        "!topics/*.yaml -diff",
        "# topics/*.yaml -diff",
        "topics/*.yaml -diff =oops",
        "topics/*.yaml -diff in^valid",
    ] {
        let source = format!("{line}\n");
        let findings = judge(&[change(".gitattributes", None, Some(&source))], GLOBS);
        assert!(findings.is_empty(), "{line} must not count: {findings:?}");
    }
}

#[test]
fn removing_or_reordering_a_line_counts_and_reformatting_it_does_not() {
    let before = "topics/*.yaml -text\ntopics/*.yaml text\n";
    let removed = judge(
        &[change(
            ".gitattributes",
            Some(before),
            Some("topics/*.yaml -text\n"),
        )],
        GLOBS,
    );
    assert_eq!(removed.len(), 1);
    assert!(
        removed[0].message.contains("removed"),
        "{}",
        removed[0].message
    );
    let reordered = judge(
        &[change(
            ".gitattributes",
            Some(before),
            Some("topics/*.yaml text\ntopics/*.yaml -text\n"),
        )],
        GLOBS,
    );
    assert_eq!(reordered.len(), 1, "order decides which line wins");
    let reformatted = judge(
        &[change(
            ".gitattributes",
            Some(before),
            Some("# normalise\ntopics/*.yaml\t  -text\r\n\ntopics/*.yaml text   \n"),
        )],
        GLOBS,
    );
    assert!(reformatted.is_empty(), "{reformatted:?}");
}

#[test]
fn patterns_are_relative_to_their_files_directory() {
    // `orders.yaml` below `docs/` can never be `topics/orders.yaml`.
    let findings = judge(
        &[change(
            "docs/.gitattributes",
            None,
            Some("orders.yaml export-ignore\n"),
        )],
        GLOBS,
    );
    assert!(findings.is_empty(), "{findings:?}");
    let findings = judge(
        &[change(
            "topics/.gitattributes",
            None,
            Some("orders.yaml export-ignore\n"),
        )],
        GLOBS,
    );
    assert_eq!(findings.len(), 1);
    assert_eq!(findings[0].slot.subject, "topics/.gitattributes#");
    let findings = judge(
        &[change(
            "clusters/.gitattributes",
            None,
            Some("prod/ export-ignore\n"),
        )],
        GLOBS,
    );
    assert_eq!(
        findings.len(),
        1,
        "a directory's export-ignore empties it in an archive"
    );
}

#[test]
fn macros_count_through_what_they_stand_for() {
    // Defined and used in the top-level file.
    let findings = judge(
        &[change(
            ".gitattributes",
            None,
            Some("[attr]hidden -diff linguist-generated\ntopics/*.yaml hidden\n"),
        )],
        GLOBS,
    );
    assert_eq!(findings.len(), 1);
    assert!(
        findings[0].message.contains("`hidden`"),
        "{}",
        findings[0].message
    );
    // A harmless macro does not count.
    let findings = judge(
        &[change(
            ".gitattributes",
            None,
            Some("[attr]yamlish linguist-language=YAML\ntopics/*.yaml yamlish\n"),
        )],
        GLOBS,
    );
    assert!(findings.is_empty(), "{findings:?}");
    // A changed definition reaches every path given the macro, wherever.
    let findings = judge(
        &[change(
            ".gitattributes",
            Some("[attr]mine -merge\n"),
            Some("[attr]mine export-ignore\n"),
        )],
        GLOBS,
    );
    assert_eq!(findings.len(), 1);
    // Below the top level git ignores a definition, and a name no file at hand defines may be
    // a macro defined where the run cannot see it.
    let findings = judge(
        &[change(
            "topics/.gitattributes",
            None,
            Some("[attr]mine export-ignore\n"),
        )],
        GLOBS,
    );
    assert!(findings.is_empty(), "{findings:?}");
    let findings = judge(
        &[change("topics/.gitattributes", None, Some("*.yaml mine\n"))],
        GLOBS,
    );
    assert_eq!(findings.len(), 1);
}

#[test]
fn a_deleted_or_renamed_attributes_file_counts_its_lines_as_removed() {
    let findings = judge(
        &[change(
            ".gitattributes",
            Some("topics/*.yaml -text\n"),
            None,
        )],
        GLOBS,
    );
    assert_eq!(findings.len(), 1);
    assert!(findings[0].message.contains("removed"));
    // No governed glob at all: nothing to reach.
    assert!(judge(&[change(".gitattributes", None, Some("* -diff\n"))], &[]).is_empty());
}

#[test]
fn the_occurrence_covers_the_lines_and_the_globs() {
    let of = |source: &str, globs: &[&str]| {
        judge(&[change(".gitattributes", None, Some(source))], globs)[0]
            .occurrence
            .clone()
    };
    let first = of("*.yaml -diff\n", GLOBS);
    assert_eq!(
        first,
        of("\n  *.yaml   -diff\n", GLOBS),
        "formatting is not content"
    );
    assert_ne!(first, of("*.yaml -diff -text\n", GLOBS));
    assert_ne!(
        first,
        of("*.yaml -diff\n", &["topics/*.yaml"]),
        "the globs it reaches"
    );
}

#[test]
fn wildmatch_follows_gits_examples() {
    // From git's t/t3070-wildmatch.sh (pathname mode).
    for (pattern, text, expected) in [
        ("foo", "foo", true),
        ("*", "foo/bar", false),
        ("**", "foo/bar", true),
        ("foo/**/bar", "foo/bar", true),
        ("foo/**/bar", "foo/baz/qux/bar", true),
        ("foo/**", "foo/bar/baz", true),
        ("foo/*", "foo/bar/baz", false),
        ("**/foo", "foo", true),
        ("**/foo", "x/y/foo", true),
        ("foo**bar", "foo/bar", false),
        ("[ab]*", "b/c", false),
        ("[!a]x", "bx", true),
        ("[[:digit:]]", "5", true),
        ("[[:nope:]]", "5", false),
        ("\\*", "*", true),
        ("a?c", "a/c", false),
        ("*/foo", "bar/foo", true),
        ("*/foo", "a/bar/foo", false),
    ] {
        assert_eq!(
            wildmatch(pattern.as_bytes(), text.as_bytes(), true),
            expected,
            "{pattern} vs {text}"
        );
    }
}

fn glob_matches(glob: &str, path: &str) -> bool {
    GlobBuilder::new(glob)
        .literal_separator(true)
        .build()
        .is_ok_and(|g| g.compile_matcher().is_match(path))
}

/// Paths of a small alphabet, so that patterns and globs built of it meet often.
fn path_strategy() -> impl Strategy<Value = String> {
    prop::collection::vec(
        prop::sample::select(vec!["a", "b", "ab", "x.yaml", "A"]),
        1..5,
    )
    .prop_map(|parts| parts.join("/"))
}

fn pattern_strategy() -> impl Strategy<Value = String> {
    prop::collection::vec(
        prop::sample::select(vec!["a", "b", "*", "**", "?", "[ab]", ".yaml", "/", "x"]),
        1..6,
    )
    .prop_map(|parts| parts.concat())
}

proptest! {
    #![proptest_config(ProptestConfig::with_cases(2000))]

    /// A path both the attributes pattern and the glob match is always seen: the overlap
    /// test may over-report, never miss.
    #[test]
    fn may_overlap_never_misses_a_path_both_match(
        directory in prop::sample::select(vec!["", "a/", "b/a/"]),
        pattern in pattern_strategy(),
        glob in pattern_strategy(),
        path in path_strategy(),
    ) {
        let pattern = AttributesPattern::new(directory, &pattern);
        if glob_matches(&glob, &path) {
            if pattern.matches(&path, false) {
                prop_assert!(may_overlap(&pattern, false, &glob), "{pattern:?} {glob} {path}");
            }
            // A directory the pattern matches, above the path.
            let mut parts: Vec<&str> = path.split('/').collect();
            parts.pop();
            while !parts.is_empty() {
                if pattern.matches(&parts.join("/"), true) {
                    prop_assert!(may_overlap(&pattern, true, &glob), "{pattern:?} {glob} {path}");
                }
                parts.pop();
            }
        }
    }
}
