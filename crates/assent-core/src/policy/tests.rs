//! Loading and evaluation tests over whole policy documents.

use serde_json::{Value, json};

use super::loader::valid_rule_id;
use super::*;
use crate::model::Role;

const CONTRACT_EXAMPLE: &str = r#"apiVersion: assent/v1
kind: Policy
identities:                      # optional: list pointer pattern -> identity field
  "topics/*.yaml": { "/topics": name }
rules:
  - id: retention-shrink           # unique across all policy files
    match:
      files: ["topics/*.yaml"]     # globs against repo paths
      pointer: "/topics/*/retention_days"   # * = one segment, ** = any depth
      kinds: [modify]              # default: all kinds
    when: "int(new) < int(old)"    # optional CEL over old, new, kind, file, pointer, entry, mr
    effect: challenge              # comment | challenge | block
    message: "Retention of {{ entry }} shrinks from {{ old }} to {{ new }} days. Sure?"
"#;

fn file(path: &str, text: &str) -> PolicyFile {
    PolicyFile {
        path: path.to_owned(),
        bytes: text.as_bytes().to_vec(),
    }
}

fn load(text: &str) -> PolicySet {
    PolicySet::load(&[file(".assent/policies/p.yaml", text)]).unwrap_or_else(|p| panic!("{p:?}"))
}

fn problems(text: &str) -> Vec<String> {
    PolicySet::load(&[file("p.yaml", text)])
        .expect_err("must not load")
        .iter()
        .map(ToString::to_string)
        .collect()
}

fn change(
    file: &str,
    pointer: &str,
    kind: ChangeKind,
    old: Option<Value>,
    new: Option<Value>,
) -> Change {
    Change {
        file: file.to_owned(),
        pointer: pointer.to_owned(),
        kind,
        old,
        new,
        old_line: None,
        new_line: None,
    }
}

/// A one-rule document around `rule_body` (indented under `- `).
fn one_rule(rule_body: &str) -> String {
    format!("apiVersion: assent/v1\nkind: Policy\nrules:\n  - {rule_body}\n")
}

#[test]
fn spec_example_loads_and_fires_on_retention_shrink() {
    let set = load(CONTRACT_EXAMPLE);
    assert_eq!(set.rule_ids(), vec!["retention-shrink"]);
    let shrink = change(
        "topics/orders.yaml",
        "/topics/orders.events.v1/retention_days",
        ChangeKind::Modify,
        Some(json!(30)),
        Some(json!(7)),
    );
    let grow = change(
        "topics/orders.yaml",
        "/topics/orders.events.v1/retention_days",
        ChangeKind::Modify,
        Some(json!(7)),
        Some(json!(30)),
    );
    let elsewhere = change(
        "other/orders.yaml",
        "/topics/orders.events.v1/retention_days",
        ChangeKind::Modify,
        Some(json!(30)),
        Some(json!(7)),
    );
    let added = change(
        "topics/orders.yaml",
        "/topics/orders.events.v1/retention_days",
        ChangeKind::Add,
        None,
        Some(json!(7)),
    );
    let findings = set
        .evaluate(
            &[shrink.clone(), grow, elsewhere, added],
            &MrContext::default(),
        )
        .findings;
    assert_eq!(findings.len(), 1);
    let f = &findings[0];
    assert_eq!(f.slot.rule, "retention-shrink");
    assert_eq!(
        f.slot.subject,
        "topics/orders.yaml#/topics/orders.events.v1/retention_days"
    );
    assert_eq!(f.effect, Effect::Challenge);
    assert_eq!(
        f.message,
        "Retention of `orders.events.v1` shrinks from `30` to `7` days. Sure?"
    );
    assert_eq!(
        f.occurrence,
        Occurrence::of(
            "retention-shrink",
            &shrink.subject(),
            ChangeKind::Modify,
            Some(&json!(30)),
            Some(&json!(7))
        )
    );
}

#[test]
fn empty_file_set_loads_with_no_rules_and_judges_nothing() {
    let set = PolicySet::load(&[]).unwrap();
    assert!(set.rule_ids().is_empty());
    let c = change("a.yaml", "", ChangeKind::Add, None, Some(json!({})));
    assert!(
        set.evaluate(&[c], &MrContext::default())
            .findings
            .is_empty()
    );
    assert_eq!(set.identity_for("topics/a.yaml", "/topics"), None);
}

#[test]
fn document_level_problems_name_their_lines() {
    let got = problems("apiVersion: assent/v2\nkind: Policies\nrules: []\n");
    assert_eq!(
        got,
        vec![
            "p.yaml:1: apiVersion must be `assent/v1`, found `assent/v2`",
            "p.yaml:2: kind must be `Policy`, found `Policies`",
            "p.yaml:3: rules must not be empty",
        ]
    );
}

#[test]
fn structure_errors_carry_the_yaml_line() {
    // Unknown top-level field.
    // Read on as `rules` (`document::recover`), the file has no rule either.
    let got = problems("apiVersion: assent/v1\nkind: Policy\nrulez: []\n");
    assert_eq!(got.len(), 2, "{got:?}");
    assert!(
        got[0].starts_with("p.yaml:3: rules must not be empty"),
        "{got:?}"
    );
    assert!(
        got[1].starts_with("p.yaml:3: unknown field `rulez`")
            && got[1].ends_with("(did you mean `rules`?)"),
        "{got:?}"
    );
    // Unknown field inside match.
    let got = problems(&one_rule(
        "id: a\n    match:\n      files: [x]\n      pointers: /a\n    effect: block",
    ));
    assert!(
        got[0].starts_with("p.yaml:7: rules[0].match: unknown field `pointers`"),
        "{got:?}"
    );
    // Missing required field.
    let got = problems(&one_rule("id: a\n    match: {files: [x]}"));
    assert!(
        got[0].starts_with("p.yaml:4: ") && got[0].contains("missing field `effect`"),
        "{got:?}"
    );
    // Wrong type.
    let got = problems(&one_rule("id: a\n    match: {files: x}\n    effect: block"));
    assert!(
        got[0].starts_with("p.yaml:5: ") && got[0].contains("invalid type"),
        "{got:?}"
    );
}

#[test]
fn yaml_syntax_error_has_its_line() {
    let got = problems(
        "apiVersion: assent/v1\nkind: Policy\nrules:\n  - id: [unclosed\n    effect: block\n",
    );
    assert_eq!(got.len(), 1);
    assert!(got[0].starts_with("p.yaml:"), "{got:?}");
    let line: usize = got[0].split(':').nth(1).unwrap().parse().unwrap();
    assert!((4..=6).contains(&line), "{got:?}");
}

#[test]
fn non_utf8_and_empty_files_are_problems() {
    let bad = PolicyFile {
        path: "bin.yaml".into(),
        bytes: b"apiVersion: assent/v1\nkind: \xff\n".to_vec(),
    };
    let got = PolicySet::load(&[bad]).unwrap_err();
    assert_eq!(got[0].to_string(), "bin.yaml:2: not valid UTF-8");
    let got = problems("");
    assert_eq!(got.len(), 1);
    assert!(got[0].starts_with("p.yaml"), "{got:?}");
}

#[test]
fn every_rule_level_problem_is_reported_with_its_field_line() {
    let text = "\
apiVersion: assent/v1
kind: Policy
rules:
  - id: Bad_Id
    match:
      files: [\"topics/[x\"]
      pointer: topics/*
      kinds: [modify, rename]
    when: \"int(new) <\"
    effect: warn
    message: \"{{ olds }}\"
  - id: assent/self-edit
    match: { files: [\"a\"], kinds: [] }
    effect: block
  - id: ok
    match:
      files: []
    when: \"nwe > 1\"
    effect: block
";
    let got = problems(text);
    let expected_prefixes = [
        "p.yaml:4: rule id `Bad_Id` must match",
        "p.yaml:6: rule `Bad_Id`: invalid file glob `topics/[x`",
        "p.yaml:7: rule `Bad_Id`: invalid pointer pattern `topics/*`",
        "p.yaml:8: rule `Bad_Id`: unknown kind `rename`",
        "p.yaml:9: rule `Bad_Id`: `when` does not compile",
        "p.yaml:10: rule `Bad_Id`: unknown effect `warn`",
        "p.yaml:11: rule `Bad_Id`: unknown placeholder `{{ olds }}`",
        "p.yaml:12: rule id `assent/self-edit`: the `assent/` prefix is reserved",
        // flow-style match: the kinds problem falls back to the `match:` line.
        "p.yaml:13: rule `assent/self-edit`: match.kinds must not be empty",
        "p.yaml:17: rule `ok`: match.files must not be empty",
        "p.yaml:18: rule `ok`: `when` uses undeclared name `nwe`",
    ];
    assert_eq!(got.len(), expected_prefixes.len(), "{got:#?}");
    for (g, e) in got.iter().zip(expected_prefixes) {
        assert!(
            g.starts_with(e),
            "{g:?} should start with {e:?}\nall: {got:#?}"
        );
    }
}

#[test]
fn duplicate_rule_ids_across_files_name_both_places() {
    let a = file(
        ".assent/policies/a.yaml",
        &one_rule("id: shared\n    match: {files: [x]}\n    effect: block"),
    );
    let b = file(
        ".assent/policies/b.yaml",
        "apiVersion: assent/v1\nkind: Policy\nrules:\n  - id: other\n    match: {files: [x]}\n    effect: block\n  - id: shared\n    match: {files: [y]}\n    effect: comment\n",
    );
    // Input order does not matter: files load sorted by path.
    for files in [vec![a.clone(), b.clone()], vec![b, a]] {
        let got = PolicySet::load(&files).unwrap_err();
        assert_eq!(got.len(), 1);
        assert_eq!(
            got[0].to_string(),
            ".assent/policies/b.yaml:7: duplicate rule id `shared` (first defined at .assent/policies/a.yaml:4)"
        );
    }
}

#[test]
fn problems_from_several_files_are_all_reported_sorted() {
    let files = [
        file("z.yaml", "apiVersion: assent/v1\nkind: Nope\nrules: []\n"),
        file("a.yaml", "kind: Policy\n"),
        file(
            "m.yaml",
            &one_rule("id: fine\n    match: {files: [x]}\n    effect: block"),
        ),
    ];
    let got = PolicySet::load(&files).unwrap_err();
    let files: Vec<&str> = got.iter().map(|p| p.file.as_str()).collect();
    assert_eq!(files, vec!["a.yaml", "z.yaml", "z.yaml"]);
    let mut sorted = got.clone();
    sorted.sort();
    assert_eq!(got, sorted);
}

#[test]
fn problem_display_and_order() {
    let p = |file: &str, line, message: &str| PolicyProblem {
        file: file.into(),
        line,
        message: message.into(),
    };
    assert_eq!(p("a", Some(3), "m").to_string(), "a:3: m");
    assert_eq!(p("a", None, "m").to_string(), "a: m");
    let mut v = [
        p("b", Some(1), "x"),
        p("a", Some(10), "x"),
        p("a", Some(2), "z"),
        p("a", Some(2), "y"),
        p("a", None, "w"),
    ];
    v.sort();
    let shown: Vec<String> = v.iter().map(ToString::to_string).collect();
    assert_eq!(shown, vec!["a: w", "a:2: y", "a:2: z", "a:10: x", "b:1: x"]);
}

#[test]
fn identity_problems_and_conflicts() {
    let text = "\
apiVersion: assent/v1
kind: Policy
identities:
  \"topics/[x\": { \"/topics\": name }
  \"svc/*.yaml\":
    \"services\": id
    \"/services/*/ports\": \"\"
rules:
  - id: r
    match: {files: [x]}
    effect: block
";
    let got = problems(text);
    assert_eq!(got.len(), 3, "{got:#?}");
    assert!(
        got[0].starts_with("p.yaml:4: identities: invalid file glob"),
        "{got:#?}"
    );
    assert!(
        got[1].starts_with("p.yaml:6: identities: invalid pointer pattern `services`"),
        "{got:#?}"
    );
    assert!(
        got[2].starts_with("p.yaml:7: identities: empty identity field"),
        "{got:#?}"
    );

    let a = file(
        "a.yaml",
        "apiVersion: assent/v1\nkind: Policy\nidentities:\n  \"t/*.yaml\": { \"/t\": name }\nrules:\n  - id: a\n    match: {files: [x]}\n    effect: block\n",
    );
    let b = file(
        "b.yaml",
        "apiVersion: assent/v1\nkind: Policy\nidentities:\n  \"t/*.yaml\": { \"/t\": id }\nrules:\n  - id: b\n    match: {files: [x]}\n    effect: block\n",
    );
    let got = PolicySet::load(&[a, b]).unwrap_err();
    assert_eq!(
        got[0].to_string(),
        "b.yaml:4: identities: `t/*.yaml` `/t` is keyed by `id` here but by `name` at a.yaml:4"
    );
}

#[test]
fn identity_lookup_and_entry() {
    let set = load(
        "apiVersion: assent/v1
kind: Policy
identities:
  \"topics/*.yaml\": { \"/topics\": name }
  \"services/**\":
    \"/services\": id
    \"/services/*/endpoints\": path
  \"**\": { \"/items\": key }
rules:
  - id: r
    match: {files: [\"**\"]}
    effect: comment
",
    );
    assert_eq!(
        set.identity_for("topics/orders.yaml", "/topics").as_deref(),
        Some("name")
    );
    assert_eq!(set.identity_for("topics/sub/orders.yaml", "/topics"), None);
    assert_eq!(set.identity_for("topics/orders.yaml", "/topics/x"), None);
    assert_eq!(
        set.identity_for("services/a/b.json", "/services/api/endpoints")
            .as_deref(),
        Some("path")
    );
    assert_eq!(
        set.identity_for("anything.yaml", "/items").as_deref(),
        Some("key")
    );

    let f = "topics/orders.yaml";
    assert_eq!(
        set.entry_of(f, "/topics/orders.events.v1/retention_days")
            .as_deref(),
        Some("orders.events.v1")
    );
    assert_eq!(
        set.entry_of(f, "/topics/orders.events.v1").as_deref(),
        Some("orders.events.v1")
    );
    assert_eq!(set.entry_of(f, "/topics"), None);
    assert_eq!(set.entry_of(f, ""), None);
    assert_eq!(set.entry_of(f, "/owners/x"), None);
    // Escaped tokens come back unescaped.
    assert_eq!(
        set.entry_of(f, "/topics/a~1b~0c/x").as_deref(),
        Some("a/b~c")
    );
    // Nearest enclosing entry wins.
    let s = "services/a.yaml";
    assert_eq!(
        set.entry_of(s, "/services/api/endpoints/~1v1~1orders/method")
            .as_deref(),
        Some("/v1/orders")
    );
    assert_eq!(
        set.entry_of(s, "/services/api/owner").as_deref(),
        Some("api")
    );
}

const EVAL_POLICY: &str = r#"apiVersion: assent/v1
kind: Policy
identities:
  "topics/*.yaml": { "/topics": name }
rules:
  - id: any-change
    match:
      files: ["topics/*.yaml"]
    effect: comment
  - id: strings
    match: { files: ["topics/*.yaml"], pointer: "/topics/*/owner", kinds: [modify] }
    when: "new != old && !new.startsWith('team-')"
    effect: block
    message: "owner {{old}} -> {{new}} ({{ kind }} {{file}}{{pointer}} by {{rule}})"
  - id: bools
    match: { files: ["topics/*.yaml"], pointer: "/topics/*/compacted" }
    when: "old == true && new == false"
    effect: challenge
    message: "{{ entry }}: compaction off"
  - id: lists
    match: { files: ["topics/*.yaml"], pointer: "/topics/*/consumers" }
    when: "old.exists(c, !(c in new))"
    effect: challenge
    message: "consumers {{ old }} -> {{ new }}"
  - id: maps
    match: { files: ["topics/*.yaml"], pointer: "/topics/*", kinds: [delete, add] }
    when: "kind == 'delete' ? old.partitions > 1 : new == null"
    effect: block
    message: "{{kind}} {{ entry }} {{ old }}"
  - id: labels
    match: { files: ["topics/*.yaml"], pointer: "/**/retention_days" }
    when: "'retention-ok' in mr.labels && mr.iid == 7 && mr.author == 'ann'"
    effect: comment
"#;

fn rules_fired(findings: &[Finding]) -> Vec<(&str, Effect)> {
    findings
        .iter()
        .map(|f| (f.slot.rule.as_str(), f.effect))
        .collect()
}

#[test]
fn evaluation_over_strings_bools_lists_maps_and_null() {
    let set = load(EVAL_POLICY);
    let mr = MrContext::default();
    let t = "topics/orders.yaml";

    let owner = change(
        t,
        "/topics/o/owner",
        ChangeKind::Modify,
        Some(json!("team-a")),
        Some(json!("bob")),
    );
    let f = set.evaluate(&[owner], &mr).findings;
    assert_eq!(
        rules_fired(&f),
        vec![("any-change", Effect::Comment), ("strings", Effect::Block)]
    );
    assert_eq!(
        f[1].message,
        "owner `team-a` -> `bob` (modify `topics/orders.yaml` `/topics/o/owner` by strings)"
    );
    assert_eq!(
        f[0].message,
        "any-change: modify of `/topics/o/owner` in `topics/orders.yaml`"
    );

    let compacted = change(
        t,
        "/topics/o/compacted",
        ChangeKind::Modify,
        Some(json!(true)),
        Some(json!(false)),
    );
    let f = set.evaluate(&[compacted], &mr).findings;
    assert_eq!(
        rules_fired(&f),
        vec![
            ("any-change", Effect::Comment),
            ("bools", Effect::Challenge)
        ]
    );
    assert_eq!(f[1].message, "`o`: compaction off");

    let consumers = change(
        t,
        "/topics/o/consumers",
        ChangeKind::Modify,
        Some(json!(["a", "b"])),
        Some(json!(["a"])),
    );
    let f = set.evaluate(&[consumers], &mr).findings;
    assert_eq!(f[1].message, r#"consumers `["a","b"]` -> `["a"]`"#);
    let more = change(
        t,
        "/topics/o/consumers",
        ChangeKind::Modify,
        Some(json!(["a"])),
        Some(json!(["a", "b"])),
    );
    assert_eq!(
        rules_fired(&set.evaluate(&[more], &mr).findings),
        vec![("any-change", Effect::Comment)]
    );

    let deleted = change(
        t,
        "/topics/o",
        ChangeKind::Delete,
        Some(json!({"partitions": 3, "name": "o"})),
        None,
    );
    let f = set.evaluate(&[deleted], &mr).findings;
    assert_eq!(
        rules_fired(&f),
        vec![("any-change", Effect::Comment), ("maps", Effect::Block)]
    );
    assert_eq!(f[1].message, r#"delete `o` `{"name":"o","partitions":3}`"#);

    // An add of an explicit null: `new == null` holds; the message renders `null`.
    let null_add = change(t, "/topics/n", ChangeKind::Add, None, Some(Value::Null));
    let f = set.evaluate(&[null_add], &mr).findings;
    assert_eq!(
        rules_fired(&f),
        vec![("any-change", Effect::Comment), ("maps", Effect::Block)]
    );
    assert_eq!(f[1].message, "add `n` `null`");
}

#[test]
fn mr_context_is_visible_to_predicates() {
    let set = load(EVAL_POLICY);
    let c = change(
        "topics/a.yaml",
        "/topics/x/retention_days",
        ChangeKind::Modify,
        Some(json!(1)),
        Some(json!(2)),
    );
    let mut mr = MrContext {
        iid: 7,
        author: "ann".into(),
        labels: vec!["retention-ok".into()],
        ..MrContext::default()
    };
    assert_eq!(
        rules_fired(&set.evaluate(std::slice::from_ref(&c), &mr).findings),
        vec![("any-change", Effect::Comment), ("labels", Effect::Comment)]
    );
    mr.labels.clear();
    assert_eq!(
        rules_fired(&set.evaluate(&[c], &mr).findings),
        vec![("any-change", Effect::Comment)]
    );
}

#[test]
fn whole_file_changes_match_the_default_pointer() {
    let set = load(&one_rule(
        "id: new-file\n    match: {files: [\"topics/*.yaml\"], kinds: [add]}\n    effect: comment",
    ));
    let f = set
        .evaluate(
            &[change(
                "topics/a.yaml",
                "",
                ChangeKind::Add,
                None,
                Some(json!({"topics": []})),
            )],
            &MrContext::default(),
        )
        .findings;
    assert_eq!(f.len(), 1);
    assert_eq!(f[0].slot.subject, "topics/a.yaml#");
    assert_eq!(f[0].message, "new-file: add of ` ` in `topics/a.yaml`");
}

#[test]
fn runtime_error_is_a_block_finding_for_the_same_slot() {
    let set = load(CONTRACT_EXAMPLE);
    let bad = change(
        "topics/orders.yaml",
        "/topics/o/retention_days",
        ChangeKind::Modify,
        Some(json!(30)),
        Some(json!("abc")),
    );
    let f = set
        .evaluate(std::slice::from_ref(&bad), &MrContext::default())
        .findings;
    assert_eq!(f.len(), 1);
    assert_eq!(f[0].effect, Effect::Block);
    assert_eq!(f[0].slot.rule, "retention-shrink");
    assert_eq!(f[0].slot.subject, bad.subject());
    assert_eq!(
        f[0].occurrence,
        Occurrence::of(
            "retention-shrink",
            &bad.subject(),
            ChangeKind::Modify,
            Some(&json!(30)),
            Some(&json!("abc"))
        )
    );
    assert!(
        f[0].message.starts_with("rule `retention-shrink` could not be evaluated on `topics/orders.yaml#/topics/o/retention_days`: "),
        "{}",
        f[0].message
    );
    assert!(
        f[0].message.ends_with(" — fix the rule or the data"),
        "{}",
        f[0].message
    );

    // Missing key and non-bool results are errors too, never a silent false.
    let set = load(&one_rule(
        "id: r\n    match: {files: [x]}\n    when: new.missing > 1\n    effect: comment",
    ));
    let f = set
        .evaluate(
            &[change("x", "/a", ChangeKind::Add, None, Some(json!({})))],
            &MrContext::default(),
        )
        .findings;
    assert_eq!(f[0].effect, Effect::Block);
    let set = load(&one_rule(
        "id: r\n    match: {files: [x]}\n    when: new\n    effect: comment",
    ));
    let f = set
        .evaluate(
            &[change("x", "/a", ChangeKind::Add, None, Some(json!(1)))],
            &MrContext::default(),
        )
        .findings;
    assert_eq!(f[0].effect, Effect::Block);
    assert!(
        f[0].message.contains("must yield a bool"),
        "{}",
        f[0].message
    );
}

#[test]
fn hostile_expressions_are_bounded() {
    // Nested map over map completes.
    let set = load(&one_rule(
        "id: r\n    match: {files: [x]}\n    when: \"size([1,2,3].map(x, [1,2,3].map(y, y))) == 3\"\n    effect: comment",
    ));
    assert_eq!(
        set.evaluate(
            &[change("x", "/a", ChangeKind::Add, None, Some(json!(1)))],
            &MrContext::default()
        )
        .findings
        .len(),
        1
    );
    // A third level of comprehension is refused at load time.
    let got = problems(&one_rule(
        "id: r\n    match: {files: [x]}\n    when: \"new.all(a, new.all(b, new.all(c, a + b + c > 0)))\"\n    effect: comment",
    ));
    assert!(
        got[0].starts_with("p.yaml:6: rule `r`: `when` nests more than 2 comprehension"),
        "{got:?}"
    );
    let long = format!(
        "id: r\n    match: {{files: [x]}}\n    when: \"new == '{}'\"\n    effect: comment",
        "a".repeat(5000)
    );
    assert!(problems(&one_rule(&long))[0].contains("the limit is 4096"));
}

#[test]
fn findings_follow_change_order_then_rule_load_order_across_files() {
    let a = file(
        "b.yaml",
        &one_rule("id: second\n    match: {files: [x]}\n    effect: comment"),
    );
    let b = file(
        "a.yaml",
        &one_rule("id: first\n    match: {files: [x]}\n    effect: block"),
    );
    let set = PolicySet::load(&[a.clone(), b.clone()]).unwrap();
    assert_eq!(set.rule_ids(), vec!["first", "second"]);
    let changes = [
        change(
            "x",
            "/2",
            ChangeKind::Modify,
            Some(json!(1)),
            Some(json!(2)),
        ),
        change("x", "/1", ChangeKind::Delete, Some(json!(1)), None),
    ];
    let f = set.evaluate(&changes, &MrContext::default()).findings;
    let order: Vec<String> = f.iter().map(|f| f.slot.to_string()).collect();
    assert_eq!(
        order,
        vec![
            "first @ x#/2",
            "second @ x#/2",
            "first @ x#/1",
            "second @ x#/1"
        ]
    );
    // Determinism: same inputs, any file order, same findings.
    let again = PolicySet::load(&[b, a])
        .unwrap()
        .evaluate(&changes, &MrContext::default())
        .findings;
    assert_eq!(f, again);
    assert_eq!(f, set.evaluate(&changes, &MrContext::default()).findings);
}

#[test]
fn digest_is_stable_and_sensitive_to_content_and_path() {
    let a = file("a.yaml", "x: 1\n");
    let b = file("b.yaml", "y: 2\n");
    let d = PolicySet::digest(&[a.clone(), b.clone()]);
    assert_eq!(
        d,
        PolicySet::digest(&[b.clone(), a.clone()]),
        "order of input does not matter"
    );
    assert!(d.starts_with("sha256:") && d.len() == 7 + 64);
    assert_ne!(d, PolicySet::digest(&[a.clone(), file("b.yaml", "y: 3\n")]));
    assert_ne!(d, PolicySet::digest(&[a.clone(), file("c.yaml", "y: 2\n")]));
    assert_ne!(d, PolicySet::digest(std::slice::from_ref(&a)));
    // Bytes cannot move between path and content unnoticed.
    assert_ne!(
        PolicySet::digest(&[file("ab", "c")]),
        PolicySet::digest(&[file("a", "bc")])
    );
    // Pin the documented encoding.
    let mut bytes = b"a.yaml\0".to_vec();
    bytes.extend_from_slice(&5u64.to_be_bytes());
    bytes.extend_from_slice(b"x: 1\n");
    assert_eq!(
        PolicySet::digest(&[a]),
        Occurrence::digest(&bytes).to_string()
    );
    assert_eq!(PolicySet::digest(&[]), Occurrence::digest(b"").to_string());
}

#[test]
fn policy_set_can_be_shared_across_threads() {
    fn assert_send_sync<T: Send + Sync>() {}
    assert_send_sync::<PolicySet>();
}

#[test]
fn flow_style_rules_fall_back_to_the_rules_line() {
    let text = "apiVersion: assent/v1\nkind: Policy\nrules: [{id: a, match: {files: [x]}, effect: loud}]\n";
    let got = problems(text);
    assert_eq!(got.len(), 1);
    assert!(
        got[0].starts_with("p.yaml:3: rule `a`: unknown effect `loud`"),
        "{got:?}"
    );
}

#[test]
fn multi_document_files_are_rejected() {
    let text = format!(
        "{}---\n{}",
        one_rule("id: a\n    match: {files: [x]}\n    effect: block"),
        one_rule("id: b\n    match: {files: [x]}\n    effect: block")
    );
    let got = problems(&text);
    assert_eq!(got.len(), 1);
    assert!(got[0].contains("more than one document"), "{got:?}");
    // The second document starts after the first one's 6 lines.
    assert!(got[0].starts_with("p.yaml:7: "), "{got:?}");
    // A leading `---` only opens the first document.
    let leading = format!(
        "# policy\n---\n{}",
        one_rule("id: a\n    match: {files: [x]}\n    effect: block")
    );
    assert!(PolicySet::load(&[file("p.yaml", &leading)]).is_ok());
}

#[test]
fn rule_id_grammar() {
    for ok in ["a", "0", "retention-shrink", "topics.delete_v2", "9-lives"] {
        assert!(valid_rule_id(ok), "{ok}");
    }
    for bad in ["", "-a", ".a", "_a", "A", "a b", "a/b", "ä", "a:b"] {
        assert!(!valid_rule_id(bad), "{bad}");
    }
    let got = problems(&one_rule(
        "id: \"\"\n    match: {files: [x]}\n    effect: block",
    ));
    assert!(
        got[0].starts_with("p.yaml:4: rule id `` must match"),
        "{got:?}"
    );
}

#[test]
fn a_rule_with_several_globs_matches_any_of_them() {
    let set = load(&one_rule(
        "id: r\n    match:\n      files: [\"a/*.yaml\", \"b/**/*.json\"]\n    effect: comment",
    ));
    let mk = |f: &str| change(f, "/x", ChangeKind::Add, None, Some(json!(1)));
    let f = set
        .evaluate(
            &[
                mk("a/1.yaml"),
                mk("a/s/1.yaml"),
                mk("b/1.json"),
                mk("b/c/d/1.json"),
                mk("c/1.yaml"),
            ],
            &MrContext::default(),
        )
        .findings;
    let subjects: Vec<&str> = f.iter().map(|f| f.slot.subject.as_str()).collect();
    assert_eq!(
        subjects,
        vec!["a/1.yaml#/x", "b/1.json#/x", "b/c/d/1.json#/x"]
    );
}

#[test]
fn assenters_on_a_file_apply_to_its_rules_and_a_rule_overrides_them() {
    let set = load(
        r#"apiVersion: assent/v1
kind: Policy
assenters:
  min_role: maintainer
rules:
  - id: inherits
    match: { files: ["*.yaml"] }
    effect: challenge
  - id: own
    match: { files: ["*.yaml"] }
    effect: challenge
    assenters:
      users: [dba-oncall, alice.b]
"#,
    );
    let by_rule = set.assenters_by_rule();
    assert_eq!(
        by_rule.get("inherits"),
        Some(&Assenters {
            users: vec![],
            min_role: Some(Role::Maintainer)
        })
    );
    assert_eq!(
        by_rule.get("own"),
        Some(&Assenters {
            users: vec!["dba-oncall".into(), "alice.b".into()],
            min_role: None
        })
    );
    // Without `assenters` anywhere, no rule narrows who may assent.
    assert!(load(CONTRACT_EXAMPLE).assenters_by_rule().is_empty());
}

#[test]
fn policy_owners_default_to_maintainers_and_one_file_may_name_others() {
    assert_eq!(
        load(CONTRACT_EXAMPLE).policy_owners(),
        Assenters {
            users: vec![],
            min_role: Some(Role::Maintainer)
        }
    );
    let owners = "apiVersion: assent/v1\nkind: Policy\npolicy_owners:\n  users: [alice]\n  min_role: owner\nrules:\n  - id: a\n    match: { files: [\"*.yaml\"] }\n    effect: comment\n";
    let set = PolicySet::load(&[
        file(".assent/policies/owners.yaml", owners),
        file(".assent/policies/p.yaml", CONTRACT_EXAMPLE),
    ])
    .unwrap_or_else(|p| panic!("{p:?}"));
    assert_eq!(
        set.policy_owners(),
        Assenters {
            users: vec!["alice".into()],
            min_role: Some(Role::Owner)
        }
    );
    // `policy_owners` is not an `assenters` of any rule.
    assert!(set.assenters_by_rule().is_empty());
    // A second declaration is refused where it stands, naming the first.
    let twice = PolicySet::load(&[
        file("a.yaml", owners),
        file("b.yaml", &owners.replace("id: a", "id: b")),
    ])
    .expect_err("two declarations")
    .iter()
    .map(ToString::to_string)
    .collect::<Vec<_>>();
    assert_eq!(
        twice,
        [
            "b.yaml:3: duplicate policy_owners (first declared at a.yaml:3): at most one policy file may declare it"
        ]
    );
}

#[test]
fn policy_owner_problems_name_their_lines() {
    let got = problems(
        r#"apiVersion: assent/v1
kind: Policy
policy_owners:
  users: ["@alice"]
  min_role: maintainers
rules:
  - id: r
    match: { files: ["*.yaml"] }
    effect: challenge
"#,
    );
    assert_eq!(
        got,
        [
            "p.yaml:3: policy_owners.min_role: unknown role `maintainers` (expected one of guest, reporter, developer, maintainer, owner) (did you mean `maintainer`?)",
            "p.yaml:3: policy_owners.users: write `alice` without the `@`",
        ]
    );
    let empty =
        problems(&CONTRACT_EXAMPLE.replace("kind: Policy\n", "kind: Policy\npolicy_owners: {}\n"));
    assert_eq!(
        empty,
        [
            "p.yaml:3: policy_owners must name `users` or a `min_role` (omit it to let maintainers and owners other than the MR author assent)"
        ]
    );
    let misspelt = problems(&CONTRACT_EXAMPLE.replace(
        "kind: Policy\n",
        "kind: Policy\npolicy_owner:\n  min_role: owner\n",
    ));
    assert!(
        misspelt
            .iter()
            .any(|p| p.starts_with("p.yaml:3: unknown field `policy_owner`")
                && p.contains("(did you mean `policy_owners`?)")),
        "{misspelt:?}"
    );
}

#[test]
fn assenter_problems_name_their_lines() {
    let got = problems(
        r#"apiVersion: assent/v1
kind: Policy
assenters: {}
rules:
  - id: r
    match: { files: ["*.yaml"] }
    effect: challenge
    assenters:
      users: ["@alice", "bob smith"]
      min_role: Maintainer
"#,
    );
    assert_eq!(
        got,
        [
            "p.yaml:3: assenters must name `users` or a `min_role` (omit it to let anyone but the MR author assent)",
            "p.yaml:8: rule `r`: assenters.min_role: unknown role `Maintainer` (expected one of guest, reporter, developer, maintainer, owner) (did you mean `maintainer`?)",
            "p.yaml:8: rule `r`: assenters.users: `bob smith` is not a GitLab username",
            "p.yaml:8: rule `r`: assenters.users: write `alice` without the `@`",
        ]
    );
    let unknown = problems(&one_rule(
        "id: r\n    match: { files: [\"*.yaml\"] }\n    effect: challenge\n    assenters: { groups: [x] }",
    ));
    assert!(
        unknown.iter().any(|p| p.contains("unknown field `groups`")),
        "{unknown:?}"
    );
}

/// Two rules over every change of `x`: one with a `when` that always holds, one without.
fn budget_policy() -> PolicySet {
    load(
        "apiVersion: assent/v1\nkind: Policy\nrules:\n  - id: judged\n    match: {files: [x, y]}\n    when: \"new.all(v, v >= 0)\"\n    effect: challenge\n  - id: plain\n    match: {files: [x, y]}\n    effect: comment\n",
    )
}

fn list_changes(file: &str, count: usize, len: usize) -> Vec<Change> {
    (0..count)
        .map(|i| {
            let values: Vec<usize> = (0..len).collect();
            change(
                file,
                &format!("/{i}"),
                ChangeKind::Add,
                None,
                Some(json!(values)),
            )
        })
        .collect()
}

#[test]
fn the_default_budget_leaves_ordinary_evaluations_alone() {
    let set = budget_policy();
    let evaluation = set.evaluate(&list_changes("x", 1_000, 10), &MrContext::default());
    assert!(evaluation.unevaluated.is_empty());
    assert!(!evaluation.budget.is_exhausted());
    assert_eq!(evaluation.findings.len(), 2_000);
    assert_eq!(evaluation.budget.limit(), RUN_BUDGET);
    let share = evaluation.budget.spent() / RUN_BUDGET;
    assert!(share > 0.0 && share < 1e-3, "{share}");
}

#[test]
fn past_the_budget_no_when_is_evaluated_and_the_rules_are_named_per_file() {
    let set = budget_policy();
    let mut changes = list_changes("x", 50, 100);
    changes.extend(list_changes("y", 50, 100));
    let mr = MrContext::default();
    let full = set.evaluate(&changes, &mr);
    let per_evaluation = full.budget.spent() / 100.0;
    // Room for ten evaluations and a half.
    let budget = CelBudget::new(per_evaluation * 10.5);
    let evaluation = set.evaluate_within(&changes, &mr, budget);
    assert!(evaluation.budget.is_exhausted());
    assert!(evaluation.budget.spent() <= budget.limit());
    let judged = evaluation
        .findings
        .iter()
        .filter(|f| f.slot.rule == "judged")
        .count();
    assert_eq!(judged, 10, "the first ten evaluations ran, none after");
    // A rule without `when` costs nothing and still fires on every change.
    let plain = evaluation
        .findings
        .iter()
        .filter(|f| f.slot.rule == "plain")
        .count();
    assert_eq!(plain, 100);
    let names = |rules: &[&str]| rules.iter().map(|r| (*r).to_owned()).collect();
    assert_eq!(
        evaluation.unevaluated,
        BTreeMap::from([
            ("x".to_owned(), names(&["judged"])),
            ("y".to_owned(), names(&["judged"])),
        ])
    );
    // The same inputs spend the same budget and give the same result.
    assert_eq!(evaluation, set.evaluate_within(&changes, &mr, budget));
}

#[test]
fn a_cheap_evaluation_after_a_refused_one_is_refused_too() {
    // `big` does not fit in the budget; the small change after it would, but is not
    // evaluated: what is judged never depends on where the cheap changes sit.
    let set = budget_policy();
    let changes = vec![
        change(
            "x",
            "/big",
            ChangeKind::Add,
            None,
            Some(json!(vec![1; 5_000])),
        ),
        change("y", "/small", ChangeKind::Add, None, Some(json!([1]))),
    ];
    let evaluation = set.evaluate_within(&changes, &MrContext::default(), CelBudget::new(1_000.0));
    assert_eq!(
        evaluation.unevaluated.keys().collect::<Vec<_>>(),
        vec!["x", "y"]
    );
    assert_eq!(evaluation.budget.spent(), 0.0);
    assert!(evaluation.findings.iter().all(|f| f.slot.rule == "plain"));
}

#[test]
fn a_policy_file_over_the_size_limit_is_one_problem_and_is_not_parsed() {
    let mut text = one_rule("id: r\n    match: {files: [x]}\n    effect: comment");
    text.push_str(&format!("# {}\n", "x".repeat(MAX_POLICY_FILE_BYTES)));
    assert_eq!(
        problems(&text),
        vec![format!(
            "p.yaml: file is {} bytes, more than the 1048576 allowed",
            text.len()
        )]
    );
}

#[test]
fn problems_quote_file_content_only_as_short_escaped_excerpts() {
    // `serde_yaml` quotes a scalar of the wrong type in full, and unknown keys by name.
    let secret = format!("ghp_{}", "s".repeat(4000));
    let got = problems(&format!(
        "apiVersion: assent/v1\nkind: Policy\nrules: \"{secret}\"\n"
    ));
    assert_eq!(got.len(), 1);
    assert!(
        got[0].starts_with("p.yaml:3: rules: invalid type: string \"ghp_"),
        "{got:?}"
    );
    assert!(got[0].len() < 200, "{got:?}");
    assert!(got[0].ends_with("…\", expected a sequence"), "{got:?}");
    let got = problems(&format!(
        "apiVersion: assent/v1\nkind: Policy\n\"{secret}\\e[2K\\rok\": 1\nrules: []\n"
    ));
    assert!(got[0].len() < 600, "{got:?}");
    assert!(
        !got[0].contains('\u{1b}') && !got[0].contains('\r'),
        "{got:?}"
    );
    // Values that are checked later are cut and escaped too.
    let got = problems(&one_rule(&format!(
        "id: \"{}\\e]0;pwned\\u0007\"\n    match: {{files: [x]}}\n    effect: comment",
        "a".repeat(3000)
    )));
    assert!(got[0].contains("rule id `aaaa"), "{got:?}");
    assert!(got[0].len() < 200, "{got:?}");
    assert!(!got[0].chars().any(char::is_control), "{got:?}");
}

#[test]
fn group_above_is_a_positive_integer_and_defaults_to_25() {
    let set = load(
        "apiVersion: assent/v1\nkind: Policy\nrules:\n  - id: own\n    match: {files: [x]}\n    effect: challenge\n    group_above: 3\n  - id: plain\n    match: {files: [x]}\n    effect: comment\n",
    );
    assert_eq!(set.group_above("own"), 3);
    assert_eq!(set.group_above("plain"), DEFAULT_GROUP_ABOVE);
    assert_eq!(DEFAULT_GROUP_ABOVE, 25);
    assert_eq!(set.group_above("assent/parse-error"), DEFAULT_GROUP_ABOVE);
    // `null`, like any optional field left empty, is the default.
    let null = load(&one_rule(
        "id: r
    match: {files: [x]}
    effect: comment
    group_above: null",
    ));
    assert_eq!(null.group_above("r"), DEFAULT_GROUP_ABOVE);

    for (value, shown) in [
        ("0", "0"),
        ("-2", "-2"),
        ("2.5", "2.5"),
        ("\"30\"", "'30'"),
        ("many", "many"),
        ("[1]", "- 1"),
    ] {
        let got = problems(&one_rule(&format!(
            "id: r\n    match: {{files: [x]}}\n    effect: challenge\n    group_above: {value}"
        )));
        assert_eq!(
            got,
            vec![format!(
                "p.yaml:7: rule `r`: group_above must be a positive integer (the number of findings above which they share one thread), found `{shown}`"
            )],
            "{value}"
        );
    }
}

#[test]
fn rule_ids_longer_than_the_limit_do_not_load() {
    let ok = "a".repeat(MAX_RULE_ID_CHARS);
    load(&one_rule(&format!(
        "id: {ok}\n    match: {{files: [x]}}\n    effect: comment"
    )));
    let long = "a".repeat(MAX_RULE_ID_CHARS + 1);
    let got = problems(&one_rule(&format!(
        "id: {long}\n    match: {{files: [x]}}\n    effect: comment"
    )));
    assert_eq!(got.len(), 1, "{got:?}");
    assert!(
        got[0].contains("is 101 characters long; at most 100 are allowed"),
        "{got:?}"
    );
}

#[test]
fn evaluation_names_the_change_each_finding_judged() {
    let set = budget_policy();
    let changes = list_changes("x", 3, 1);
    let evaluation = set.evaluate(&changes, &MrContext::default());
    assert_eq!(evaluation.findings.len(), 6);
    assert_eq!(evaluation.sources, vec![0, 0, 1, 1, 2, 2]);
    for (finding, &index) in evaluation.findings.iter().zip(&evaluation.sources) {
        assert_eq!(finding.slot.subject, changes[index].subject());
    }
}

#[test]
fn an_unknown_field_no_longer_hides_the_other_problems_of_its_file() {
    let text = "\
apiVersion: assent/v1
kind: Policy
rules:
  - id: shrink
    match: {files: [\"topics/*.yaml\"]}
    when: \"nwe < old\"
    efect: challange
  - id: other
    match:
      files: [x]
      kinds: [modfy]
    effect: block
    severity: high
";
    let got = problems(text);
    assert_eq!(
        got,
        vec![
            "p.yaml:6: rule `shrink`: `when` uses undeclared name `nwe` (variables: old, new, kind, file, pointer, entry, mr) (did you mean `new`?)",
            "p.yaml:7: rule `shrink`: unknown effect `challange` (expected comment, challenge or block) (did you mean `challenge`?)",
            "p.yaml:7: rules[0]: unknown field `efect`, expected one of `id`, `match`, `when`, `effect`, `message`, `assenters`, `group_above` (did you mean `effect`?)",
            "p.yaml:11: rule `other`: unknown kind `modfy` (expected add, modify or delete) (did you mean `modify`?)",
            "p.yaml:13: rules[1]: unknown field `severity`, expected one of `id`, `match`, `when`, `effect`, `message`, `assenters`, `group_above`",
        ]
    );
}

#[test]
fn a_file_whose_only_problem_is_an_unknown_field_still_does_not_load() {
    // The recovered document is read for problems, never loaded: strict as before.
    let text = one_rule("id: a\n    match: {files: [x]}\n    effect: block\n    efect: block");
    let got = PolicySet::load(&[file("p.yaml", &text)]).unwrap_err();
    assert_eq!(got.len(), 1, "{got:?}");
    assert!(got[0].message.contains("unknown field `efect`"), "{got:?}");
    // Misspelt alone, the renamed field makes the rule whole, and still nothing loads.
    let text = one_rule("id: a\n    match: {files: [x]}\n    efect: block");
    let got = PolicySet::load(&[file("p.yaml", &text)]).unwrap_err();
    assert_eq!(got.len(), 1, "{got:?}");
    // Its rule id is known to the other files: a duplicate is still reported.
    let other = file(
        "q.yaml",
        &one_rule("id: a\n    match: {files: [y]}\n    effect: block"),
    );
    let got = PolicySet::load(&[file("p.yaml", &text), other]).unwrap_err();
    assert_eq!(got.len(), 2, "{got:?}");
    assert_eq!(
        got[1].to_string(),
        "q.yaml:4: duplicate rule id `a` (first defined at p.yaml:4)"
    );
}

#[test]
fn globs_that_match_no_checkout_path_are_warned_at_their_line() {
    let set = load(
        "apiVersion: assent/v1\nkind: Policy\nrules:\n  - id: topics\n    match:\n      files: [\"topics/*.yml\", \"topics/*.yaml\"]\n    effect: block\n  - id: policies\n    match: {files: [\".assent/**\"]}\n    effect: block\n",
    );
    let paths = ["topics/orders.yaml", ".assent/policies/p.yaml", "README.md"];
    let got: Vec<String> = set
        .unmatched_globs(paths)
        .iter()
        .map(ToString::to_string)
        .collect();
    assert_eq!(
        got,
        vec![
            ".assent/policies/p.yaml:6: rule `topics`: match.files glob `topics/*.yml` matches no file in the checkout, so the rule judges nothing here",
            ".assent/policies/p.yaml:9: rule `policies`: match.files glob `.assent/**` matches no file in the checkout, so the rule judges nothing here",
        ]
    );
    assert!(
        set.unmatched_globs(["topics/a.yml", "topics/b.yaml", ".x"])
            .iter()
            .all(|w| w.message.contains("`.assent/**`"))
    );
}

/// The mirror image of the delete check: a pointer judged on `modify` or `delete` but whose
/// `add` no rule judges is a warning, so setting a key where the default applied is never
/// waved through unnoticed. A rule on the parent does not cover it; a wider pointer does.
#[test]
fn a_pointer_judged_without_its_add_is_a_warning() {
    let rules = |extra: &str| {
        format!(
            "apiVersion: assent/v1\nkind: Policy\nrules:\n\
             - id: shrink\n  match: {{ files: [\"t/*.yaml\"], pointer: \"/t/*/days\", kinds: [modify] }}\n  effect: challenge\n\
             - id: removed\n  match: {{ files: [\"t/*.yaml\"], pointer: \"/t/*/days\", kinds: [delete] }}\n  effect: challenge\n\
             - id: new-entry\n  match: {{ files: [\"t/*.yaml\"], pointer: \"/t/*\", kinds: [add, delete] }}\n  effect: comment\n{extra}"
        )
    };
    let adds = |set: &PolicySet| -> Vec<String> {
        set.uncovered_adds()
            .iter()
            .map(ToString::to_string)
            .collect()
    };
    let set = load(&rules(""));
    assert_eq!(
        adds(&set),
        [
            ".assent/policies/p.yaml:5: rule `shrink`: judges `/t/*/days` in `t/*.yaml` only on modify, and no rule judges its add, so a merge request that adds it passes unjudged; add a rule with `kinds: [add]` for that pointer",
            ".assent/policies/p.yaml:8: rule `removed`: judges `/t/*/days` in `t/*.yaml` only on delete, and no rule judges its add, so a merge request that adds it passes unjudged; add a rule with `kinds: [add]` for that pointer",
        ]
    );
    // Every delete is judged, so the delete check has nothing to say.
    assert!(set.uncovered_deletes().is_empty());
    // A rule without `kinds` on a wider pointer judges the add.
    let closed = load(&rules(
        "- id: any\n  match: { files: [\"**\"], pointer: \"/t/**\" }\n  effect: comment\n",
    ));
    assert!(adds(&closed).is_empty(), "{:?}", adds(&closed));
}

#[test]
fn the_mr_fields_read_are_those_of_rules_matching_a_change() {
    let set = load(
        r#"apiVersion: assent/v1
kind: Policy
rules:
  - id: unless-approved
    match: { files: ["topics/*.yaml"], pointer: "/topics/*/retention_days" }
    when: "int(new) < int(old) && !('retention-approved' in mr.labels) && mr.author != 'bot'"
    effect: challenge
  - id: owners-on-main
    match: { files: ["topics/*.yaml"], pointer: "/topics/*/owner" }
    when: "mr.target_branch == 'main'"
    effect: challenge
  - id: no-mr
    match: { files: ["topics/*.yaml"], pointer: "/topics/*/retention_days" }
    when: "int(new) < 1"
    effect: block
"#,
    );
    let retention = change(
        "topics/a.yaml",
        "/topics/orders/retention_days",
        ChangeKind::Modify,
        Some(serde_json::json!(30)),
        Some(serde_json::json!(7)),
    );
    let read = set.mr_fields_read(std::slice::from_ref(&retention));
    assert_eq!(
        read.iter()
            .map(|(rule, fields)| (rule.as_str(), fields.iter().copied().collect::<Vec<_>>()))
            .collect::<Vec<_>>(),
        [("unless-approved", vec!["author", "labels"])],
        "owners-on-main matches no change here; no-mr reads no field of mr"
    );
    assert!(set.mr_fields_read(&[]).is_empty());
}
