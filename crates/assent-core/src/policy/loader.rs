//! Loading policy files into a [`PolicySet`]: each file parsed, every field checked with the
//! `file:line` of each problem, rules and identities compiled. Loading reports every problem it
//! finds, not the first: an author fixes a file in one pass.

use std::collections::HashMap;
use std::sync::Arc;

use super::cel_eval::Predicate;
use super::document::{self, LineMap, RawAssenters, RawDocument, RawRule, RuleLines};
use super::pattern::{FileGlob, PointerPattern};
use super::template::Template;
use super::{
    DEFAULT_GROUP_ABOVE, Identity, MAX_POLICY_FILE_BYTES, MAX_RULE_ID_CHARS, PolicyFile,
    PolicyProblem, PolicySet, Rule, excerpt, suggest, too_large,
};
use crate::model::{Assenters, ChangeKind, Effect, Role};

pub(super) fn valid_rule_id(id: &str) -> bool {
    let mut chars = id.chars();
    chars
        .next()
        .is_some_and(|c| c.is_ascii_lowercase() || c.is_ascii_digit())
        && chars
            .all(|c| c.is_ascii_lowercase() || c.is_ascii_digit() || matches!(c, '.' | '_' | '-'))
}

/// Compiles `files` ([`PolicySet::load`]).
pub(super) fn load(files: &[PolicyFile]) -> Result<PolicySet, Vec<PolicyProblem>> {
    let mut sorted: Vec<&PolicyFile> = files.iter().collect();
    sorted.sort_by(|a, b| a.path.cmp(&b.path));
    let mut loader = Loader {
        env: Arc::new(cel::Env::stdlib()),
        problems: Vec::new(),
        rules: Vec::new(),
        identities: Vec::new(),
        seen_ids: HashMap::new(),
        seen_identities: HashMap::new(),
        policy_owners: None,
        owners_declared_at: None,
    };
    for (i, file) in sorted.iter().enumerate() {
        if i > 0 && sorted[i - 1].path == file.path {
            loader.problem(&file.path, None, "policy file given twice".to_owned());
            continue;
        }
        loader.load_file(file);
    }
    let Loader {
        env,
        mut problems,
        rules,
        identities,
        policy_owners,
        ..
    } = loader;
    if problems.is_empty() {
        Ok(PolicySet {
            rules,
            identities,
            policy_owners,
            env,
        })
    } else {
        problems.sort();
        problems.dedup();
        Err(problems)
    }
}

/// The state of one load: what compiled so far, the problems, and what the checks across
/// files need (ids and identities seen, the one `policy_owners:`).
struct Loader {
    env: Arc<cel::Env>,
    problems: Vec<PolicyProblem>,
    rules: Vec<Rule>,
    identities: Vec<Identity>,
    /// Rule id → (file, line) of its first definition.
    seen_ids: HashMap<String, (String, Option<usize>)>,
    /// (glob, pattern) → (field, file, line) of its first declaration.
    seen_identities: HashMap<(String, String), (String, String, Option<usize>)>,
    /// The checked `policy_owners:`, when one file declares it.
    policy_owners: Option<Assenters>,
    /// (file, line) of the first `policy_owners:` declaration.
    owners_declared_at: Option<(String, Option<usize>)>,
}

impl Loader {
    /// Records a problem. Its message may quote the file (a field name, an id, a YAML
    /// error's excerpt): it is cut and escaped here, once for every problem.
    fn problem(&mut self, file: &str, line: Option<usize>, message: String) {
        self.problems.push(PolicyProblem {
            file: file.to_owned(),
            line,
            message: excerpt::sanitize_message(&message),
        });
    }

    fn load_file(&mut self, file: &PolicyFile) {
        let path = file.path.as_str();
        if file.bytes.len() > MAX_POLICY_FILE_BYTES {
            self.problem(path, None, too_large(file.bytes.len()));
            return;
        }
        let text = match std::str::from_utf8(&file.bytes) {
            Ok(text) => text,
            Err(e) => {
                let valid = &file.bytes[..e.valid_up_to()];
                let line = valid.iter().filter(|&&b| b == b'\n').count() + 1;
                self.problem(path, Some(line), "not valid UTF-8".to_owned());
                return;
            }
        };
        match document::parse(text) {
            Ok(doc) => self.check_document(path, &doc, &LineMap::scan(text)),
            Err(first) => {
                // The file fails whatever else is found: reading on only tells the author
                // everything at once (`document::recover`).
                let recovered = document::recover(text, first);
                for error in recovered.errors {
                    self.problem(path, error.line, error.message);
                }
                if let Some((doc, repaired)) = recovered.document {
                    self.check_document(path, &doc, &LineMap::scan(&repaired));
                }
            }
        }
    }

    /// Checks one parsed policy file and keeps what loads of it.
    fn check_document(&mut self, path: &str, doc: &RawDocument, lines: &LineMap) {
        self.check_header(path, doc, lines);
        self.check_identities(path, doc, lines);
        let file_assenters = doc.assenters.as_ref().and_then(|raw| {
            self.check_assenters(path, lines.top("assenters"), "", Narrowing::Assenters, raw)
        });
        self.check_policy_owners(path, doc, lines);
        if doc.rules.is_empty() {
            self.problem(
                path,
                lines.top("rules"),
                "rules must not be empty".to_owned(),
            );
        }
        let count = doc.rules.len();
        for (index, raw) in doc.rules.iter().enumerate() {
            let at = FieldLines {
                rule: lines.rule(index, count),
                rules: lines.top("rules"),
            };
            self.check_rule(path, raw, &at, file_assenters.as_ref());
        }
    }

    /// `apiVersion` and `kind`.
    fn check_header(&mut self, path: &str, doc: &RawDocument, lines: &LineMap) {
        if doc.api_version != document::API_VERSION {
            self.problem(
                path,
                lines.top("apiVersion"),
                format!(
                    "apiVersion must be `{}`, found `{}`",
                    document::API_VERSION,
                    doc.api_version
                ),
            );
        }
        if doc.kind != document::KIND {
            self.problem(
                path,
                lines.top("kind"),
                format!("kind must be `{}`, found `{}`", document::KIND, doc.kind),
            );
        }
    }

    /// The `identities:` block: each declaration compiled, the same list keyed by one field
    /// in every file.
    fn check_identities(&mut self, path: &str, doc: &RawDocument, lines: &LineMap) {
        for (glob, lists) in &doc.identities.0 {
            let glob_line = lines.identity(glob);
            let file_glob = match FileGlob::new(glob) {
                Ok(g) => Some(g),
                Err(e) => {
                    self.problem(path, glob_line, format!("identities: {e}"));
                    None
                }
            };
            for (list, field) in &lists.0 {
                let line = lines
                    .identity(list)
                    .filter(|_| !list.is_empty())
                    .or(glob_line);
                let pattern = match PointerPattern::new(list) {
                    Ok(p) => Some(p),
                    Err(e) => {
                        self.problem(path, line, format!("identities: {e}"));
                        None
                    }
                };
                if field.is_empty() {
                    self.problem(
                        path,
                        line,
                        format!("identities: empty identity field for `{list}`"),
                    );
                    continue;
                }
                let key = (glob.clone(), list.clone());
                if let Some((first_field, first_file, first_line)) = self.seen_identities.get(&key)
                {
                    if first_field != field {
                        let message = format!(
                            "identities: `{glob}` `{list}` is keyed by `{field}` here but by `{first_field}` at {}",
                            place(first_file, *first_line)
                        );
                        self.problem(path, line, message);
                    }
                    continue;
                }
                self.seen_identities
                    .insert(key, (field.clone(), path.to_owned(), line));
                if let (Some(file), Some(list)) = (&file_glob, pattern) {
                    self.identities.push(Identity {
                        file: file.clone(),
                        list,
                        field: field.clone(),
                        defined_at: (path.to_owned(), line),
                        glob_line,
                    });
                }
            }
        }
    }

    /// `policy_owners:`, declared by at most one file.
    fn check_policy_owners(&mut self, path: &str, doc: &RawDocument, lines: &LineMap) {
        let Some(raw) = &doc.policy_owners else {
            return;
        };
        let line = lines.top("policy_owners");
        if let Some((first_file, first_line)) = self.owners_declared_at.clone() {
            self.problem(
                path,
                line,
                format!(
                    "duplicate policy_owners (first declared at {}): at most one policy file may declare it",
                    place(&first_file, first_line)
                ),
            );
        } else {
            self.owners_declared_at = Some((path.to_owned(), line));
            self.policy_owners = self.check_assenters(path, line, "", Narrowing::PolicyOwners, raw);
        }
    }

    /// One rule: every field checked (each problem recorded), and the rule kept only when
    /// none was found.
    fn check_rule(
        &mut self,
        path: &str,
        raw: &RawRule,
        at: &FieldLines<'_>,
        file_assenters: Option<&Assenters>,
    ) {
        let before = self.problems.len();
        self.check_rule_id(path, raw, at.of("id"));
        let files = self.rule_files(path, raw, at.of("files"));
        let pointer = self.rule_pointer(path, raw, at.of("pointer"));
        let kinds = self.rule_kinds(path, raw, at.of("kinds"));
        let effect = self.rule_effect(path, raw, at.of("effect"));
        let when = self.rule_when(path, raw, at.of("when"));
        let message = self.rule_message(path, raw, at.of("message"));
        let assenters = match &raw.assenters {
            None => file_assenters.cloned(),
            Some(own) => {
                let context = format!("rule `{}`: ", raw.id);
                self.check_assenters(
                    path,
                    at.of("assenters"),
                    &context,
                    Narrowing::Assenters,
                    own,
                )
            }
        };
        let group_above = self.rule_group_above(path, raw, at.of("group_above"));
        if self.problems.len() != before {
            return;
        }
        if let (Some(pointer), Some(effect), Some(message), Some(group_above)) =
            (pointer, effect, message, group_above)
        {
            self.rules.push(Rule {
                id: raw.id.clone(),
                files,
                pointer,
                kinds,
                when,
                effect,
                message,
                assenters,
                group_above,
                defined_at: (path.to_owned(), at.of("files")),
            });
        }
    }

    /// A rule id: not reserved, well formed, short enough, and unique across the files.
    fn check_rule_id(&mut self, path: &str, raw: &RawRule, line: Option<usize>) {
        if raw.id.starts_with("assent/") {
            self.problem(
                path,
                line,
                format!(
                    "rule id `{}`: the `assent/` prefix is reserved for built-in rules",
                    raw.id
                ),
            );
        } else if !valid_rule_id(&raw.id) {
            self.problem(
                path,
                line,
                format!("rule id `{}` must match ^[a-z0-9][a-z0-9._-]*$", raw.id),
            );
        } else if raw.id.chars().count() > MAX_RULE_ID_CHARS {
            self.problem(
                path,
                line,
                format!(
                    "rule id `{}` is {} characters long; at most {MAX_RULE_ID_CHARS} are allowed",
                    raw.id,
                    raw.id.chars().count()
                ),
            );
        } else if let Some((first_file, first_line)) = self.seen_ids.get(&raw.id) {
            let message = format!(
                "duplicate rule id `{}` (first defined at {})",
                raw.id,
                place(first_file, *first_line)
            );
            self.problem(path, line, message);
        } else {
            self.seen_ids
                .insert(raw.id.clone(), (path.to_owned(), line));
        }
    }

    /// `match.files`: at least one glob, each compiled.
    fn rule_files(&mut self, path: &str, raw: &RawRule, line: Option<usize>) -> Vec<FileGlob> {
        if raw.matcher.files.is_empty() {
            self.problem(
                path,
                line,
                format!("rule `{}`: match.files must not be empty", raw.id),
            );
        }
        let mut files = Vec::new();
        for glob in &raw.matcher.files {
            match FileGlob::new(glob) {
                Ok(g) => files.push(g),
                Err(e) => self.problem(path, line, format!("rule `{}`: {e}", raw.id)),
            }
        }
        files
    }

    /// `match.pointer`, every pointer when absent.
    fn rule_pointer(
        &mut self,
        path: &str,
        raw: &RawRule,
        line: Option<usize>,
    ) -> Option<PointerPattern> {
        match raw.matcher.pointer.as_deref().map(PointerPattern::new) {
            None => Some(PointerPattern::everything()),
            Some(Ok(p)) => Some(p),
            Some(Err(e)) => {
                self.problem(path, line, format!("rule `{}`: {e}", raw.id));
                None
            }
        }
    }

    /// `match.kinds`, every kind when absent (`None`).
    fn rule_kinds(
        &mut self,
        path: &str,
        raw: &RawRule,
        line: Option<usize>,
    ) -> Option<Vec<ChangeKind>> {
        let names = raw.matcher.kinds.as_ref()?;
        if names.is_empty() {
            self.problem(
                path,
                line,
                format!(
                    "rule `{}`: match.kinds must not be empty; omit it to match all kinds",
                    raw.id
                ),
            );
        }
        let mut kinds = Vec::new();
        for name in names {
            match name.as_str() {
                "add" => kinds.push(ChangeKind::Add),
                "modify" => kinds.push(ChangeKind::Modify),
                "delete" => kinds.push(ChangeKind::Delete),
                other => self.problem(
                    path,
                    line,
                    format!(
                        "rule `{}`: unknown kind `{other}` (expected add, modify or delete){}",
                        raw.id,
                        suggest::hint(other, &["add", "modify", "delete"])
                    ),
                ),
            }
        }
        Some(kinds)
    }

    /// `effect`.
    fn rule_effect(&mut self, path: &str, raw: &RawRule, line: Option<usize>) -> Option<Effect> {
        match raw.effect.as_str() {
            "comment" => Some(Effect::Comment),
            "challenge" => Some(Effect::Challenge),
            "block" => Some(Effect::Block),
            other => {
                self.problem(
                    path,
                    line,
                    format!(
                        "rule `{}`: unknown effect `{other}` (expected comment, challenge or block){}",
                        raw.id,
                        suggest::hint(other, &["comment", "challenge", "block"])
                    ),
                );
                None
            }
        }
    }

    /// `when`, compiled and checked; `None` when absent or broken (a broken one is a
    /// problem, so the rule is not kept).
    fn rule_when(&mut self, path: &str, raw: &RawRule, line: Option<usize>) -> Option<Predicate> {
        match raw
            .when
            .as_deref()
            .map(|src| Predicate::compile_all(&self.env, src))
        {
            None => None,
            Some(Ok(p)) => Some(p),
            Some(Err(errors)) => {
                for e in errors {
                    self.problem(path, line, format!("rule `{}`: {e}", raw.id));
                }
                None
            }
        }
    }

    /// `message`, the default message when absent.
    fn rule_message(&mut self, path: &str, raw: &RawRule, line: Option<usize>) -> Option<Template> {
        match raw.message.as_deref().map(Template::parse_all) {
            None => Some(Template::default_message()),
            Some(Ok(t)) => Some(t),
            Some(Err(errors)) => {
                for e in errors {
                    self.problem(path, line, format!("rule `{}`: {e}", raw.id));
                }
                None
            }
        }
    }

    /// `group_above`: a positive integer, [`DEFAULT_GROUP_ABOVE`] when absent.
    fn rule_group_above(
        &mut self,
        path: &str,
        raw: &RawRule,
        line: Option<usize>,
    ) -> Option<usize> {
        let Some(value) = &raw.group_above else {
            return Some(DEFAULT_GROUP_ABOVE);
        };
        let parsed = value
            .as_u64()
            .filter(|&n| n >= 1)
            .and_then(|n| usize::try_from(n).ok());
        if parsed.is_none() {
            let shown = serde_yaml::to_string(value).unwrap_or_default();
            self.problem(
                path,
                line,
                format!(
                    "rule `{}`: group_above must be a positive integer (the number of findings above which they share one thread), found `{}`",
                    raw.id,
                    shown.trim_end()
                ),
            );
        }
        parsed
    }

    /// Validates an `assenters:` or `policy_owners:` block (`field`); `None` (with problems
    /// recorded) when it is unusable.
    fn check_assenters(
        &mut self,
        path: &str,
        line: Option<usize>,
        context: &str,
        field: Narrowing,
        raw: &RawAssenters,
    ) -> Option<Assenters> {
        let before = self.problems.len();
        let (name, omitted) = match field {
            Narrowing::Assenters => ("assenters", "to let anyone but the MR author assent"),
            Narrowing::PolicyOwners => (
                "policy_owners",
                "to let maintainers and owners other than the MR author assent",
            ),
        };
        if raw.users.is_empty() && raw.min_role.is_none() {
            self.problem(
                path,
                line,
                format!("{context}{name} must name `users` or a `min_role` (omit it {omitted})"),
            );
        }
        for user in &raw.users {
            let valid = !user.is_empty()
                && user
                    .chars()
                    .all(|c| c.is_ascii_alphanumeric() || matches!(c, '.' | '_' | '-'));
            if let Some(bare) = user.strip_prefix('@') {
                self.problem(
                    path,
                    line,
                    format!("{context}{name}.users: write `{bare}` without the `@`"),
                );
            } else if !valid {
                self.problem(
                    path,
                    line,
                    format!("{context}{name}.users: `{user}` is not a GitLab username"),
                );
            }
        }
        let min_role = match raw.min_role.as_deref() {
            None => None,
            Some(role) => match Role::parse(role) {
                Some(role) => Some(role),
                None => {
                    let names: Vec<&str> = Role::ALL.iter().map(|r| r.as_str()).collect();
                    self.problem(
                        path,
                        line,
                        format!(
                            "{context}{name}.min_role: unknown role `{role}` (expected one of {}){}",
                            names.join(", "),
                            suggest::hint(role, &names)
                        ),
                    );
                    None
                }
            },
        };
        (self.problems.len() == before).then(|| Assenters {
            users: raw.users.clone(),
            min_role,
        })
    }
}

/// Where one rule's fields are written, for the problems' lines.
struct FieldLines<'a> {
    /// The rule's own lines, when the file's rules could be located.
    rule: Option<&'a RuleLines>,
    /// The `rules:` line, the fallback.
    rules: Option<usize>,
}

impl FieldLines<'_> {
    /// The line of `field`: its own, for a `match` sub-field the `match:` line (flow style),
    /// else the rule's, else `rules:`.
    fn of(&self, field: &str) -> Option<usize> {
        let fields: &[&str] = match field {
            "files" | "pointer" | "kinds" => &[field, "match"],
            _ => &[field],
        };
        self.rule.map(|r| r.of(fields)).or(self.rules)
    }
}

/// Which narrowing of who may assent a block declares.
#[derive(Debug, Clone, Copy)]
enum Narrowing {
    /// `assenters:` on a policy file or a rule.
    Assenters,
    /// `policy_owners:` on a policy file.
    PolicyOwners,
}

fn place(file: &str, line: Option<usize>) -> String {
    match line {
        Some(line) => format!("{file}:{line}"),
        None => file.to_owned(),
    }
}
