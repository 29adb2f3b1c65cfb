//! `when` predicates: CEL compiled at load time, evaluated per change.
//!
//! Variables: `old`, `new` (the JSON values, `null` when absent), `kind` (`"add"`,
//! `"modify"`, `"delete"`), `file`, `pointer`, `entry` (identity of the enclosing list entry
//! or `null`) and `mr` (map: `iid`, `title`, `source_branch`, `target_branch`, `author`,
//! `labels`). JSON converts to CEL as null, bool, int (`i64`; larger unsigned values become
//! `uint`), double, string, list, and map with string keys.
//!
//! # Guarding against hostile expressions
//!
//! Policies come from the target branch, so they are reviewed code, but a careless or
//! malicious rule must still not hang a CI job. The `cel` crate (0.15) has **no cost or
//! step limit** and no timeout. Instead, at load time:
//!
//! * the source is at most [`MAX_SOURCE_BYTES`] bytes;
//! * the syntax tree is at most [`MAX_DEPTH`] deep (the evaluator recurses per level, so this
//!   bounds its stack; the `cel` parser also has its own recursion limit);
//! * comprehensions (the `all`, `exists`, `exists_one`, `map`, `filter` macros) nest at most
//!   [`MAX_COMPREHENSION_NESTING`] deep. CEL has no loops, no recursion, no variables to double a value
//!   through and no way to build a range from a number, so the work of an accepted expression
//!   is polynomial: about its size times the square of the values it ranges over (one
//!   change's `old`/`new`, which come from a reviewed repository file).
//!
//! Identifiers are checked at load time too: a name that is neither one of the variables
//! above, a comprehension variable nor a CEL type name (`int`, `string`, …) is a problem,
//! so a typo such as `nwe` is reported by `assent lint` instead of blocking every MR.
//! (A bare receiver of a method call, such as `x` in `x.startsWith("a")`, is not checked:
//! it may be a function namespace; an undeclared one still fails at run time.)

use std::collections::{BTreeSet, HashMap};
use std::sync::Arc;

use cel::common::ast::{EntryExpr, Expr, IdedExpr};
use cel::objects::Key;
use cel::{Context, Env, Program, Value as CelValue};
use serde_json::Value;

/// Longest accepted `when` source, in bytes.
pub const MAX_SOURCE_BYTES: usize = 4096;
/// Deepest accepted syntax tree (after macro expansion).
pub const MAX_DEPTH: usize = 64;
/// Deepest accepted nesting of comprehension macros.
pub const MAX_COMPREHENSION_NESTING: usize = 2;

/// The variables every predicate may use.
pub const VARIABLES: [&str; 7] = ["old", "new", "kind", "file", "pointer", "entry", "mr"];

/// Why a predicate was rejected at load time.
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
pub enum PredicateError {
    /// Empty or whitespace-only source.
    #[error("`when` is empty; omit it to match unconditionally")]
    Empty,
    /// Source longer than [`MAX_SOURCE_BYTES`].
    #[error("`when` is {0} bytes long; the limit is {MAX_SOURCE_BYTES}")]
    TooLong(usize),
    /// The CEL parser refused it.
    #[error("`when` does not compile: {0}")]
    Syntax(String),
    /// Nested deeper than [`MAX_DEPTH`].
    #[error("`when` nests deeper than {MAX_DEPTH} levels")]
    TooDeep,
    /// Comprehensions nested deeper than [`MAX_COMPREHENSION_NESTING`].
    #[error(
        "`when` nests more than {MAX_COMPREHENSION_NESTING} comprehension macros (all/exists/exists_one/map/filter)"
    )]
    TooManyComprehensions,
    /// An identifier that is no variable.
    #[error(
        "`when` uses undeclared name `{0}` (variables: old, new, kind, file, pointer, entry, mr)"
    )]
    UndeclaredName(String),
}

/// A compiled `when` predicate.
#[derive(Debug)]
pub struct Predicate {
    program: Program,
}

/// The values one evaluation sees.
#[derive(Debug, Clone, Copy)]
pub struct Bindings<'a> {
    /// Value at the base SHA.
    pub old: Option<&'a Value>,
    /// Value at the source SHA.
    pub new: Option<&'a Value>,
    /// `add`, `modify` or `delete`.
    pub kind: &'a str,
    /// Repository path.
    pub file: &'a str,
    /// RFC 6901 pointer.
    pub pointer: &'a str,
    /// Identity of the enclosing list entry.
    pub entry: Option<&'a str>,
    /// The `mr` map, converted once per evaluation run.
    pub mr: &'a CelValue,
}

impl Predicate {
    /// Compiles and checks `source` against the limits documented on this module.
    pub fn compile(env: &Env, source: &str) -> Result<Self, PredicateError> {
        if source.trim().is_empty() {
            return Err(PredicateError::Empty);
        }
        if source.len() > MAX_SOURCE_BYTES {
            return Err(PredicateError::TooLong(source.len()));
        }
        let program = env
            .compile(source)
            .map_err(|e| PredicateError::Syntax(one_line(&e.to_string())))?;
        let mut check = Check {
            env,
            bound: Vec::new(),
            undeclared: BTreeSet::new(),
        };
        check.walk(program.expression(), 1, 0)?;
        if let Some(name) = check.undeclared.into_iter().next() {
            return Err(PredicateError::UndeclaredName(name));
        }
        Ok(Predicate { program })
    }

    /// Evaluates; `Err` carries a one-line description for a run-time error or a non-bool.
    pub fn evaluate(&self, env: &Arc<Env>, b: &Bindings<'_>) -> Result<bool, String> {
        let mut ctx = Context::with_env(Arc::clone(env));
        ctx.add_variable_from_value("old", b.old.map_or(CelValue::Null, json_to_cel));
        ctx.add_variable_from_value("new", b.new.map_or(CelValue::Null, json_to_cel));
        ctx.add_variable_from_value("kind", b.kind);
        ctx.add_variable_from_value("file", b.file);
        ctx.add_variable_from_value("pointer", b.pointer);
        ctx.add_variable_from_value("entry", b.entry.map_or(CelValue::Null, CelValue::from));
        ctx.add_variable_from_value("mr", b.mr.clone());
        match self.program.execute(&ctx) {
            Ok(CelValue::Bool(v)) => Ok(v),
            Ok(other) => Err(format!(
                "`when` must yield a bool, got {}",
                type_name(&other)
            )),
            Err(e) => Err(one_line(&e.to_string())),
        }
    }
}

/// Converts a JSON value to CEL (see the module docs for the mapping).
pub fn json_to_cel(value: &Value) -> CelValue {
    match value {
        Value::Null => CelValue::Null,
        Value::Bool(b) => CelValue::Bool(*b),
        Value::Number(n) => {
            if let Some(i) = n.as_i64() {
                CelValue::Int(i)
            } else if let Some(u) = n.as_u64() {
                CelValue::UInt(u)
            } else {
                CelValue::Float(n.as_f64().unwrap_or(f64::NAN))
            }
        }
        Value::String(s) => CelValue::String(Arc::new(s.clone())),
        Value::Array(items) => CelValue::List(Arc::new(items.iter().map(json_to_cel).collect())),
        Value::Object(map) => {
            let converted: HashMap<Key, CelValue> = map
                .iter()
                .map(|(k, v)| (Key::from(k.as_str()), json_to_cel(v)))
                .collect();
            CelValue::from(converted)
        }
    }
}

fn type_name(v: &CelValue) -> &'static str {
    match v {
        CelValue::Null => "null",
        CelValue::Int(_) => "int",
        CelValue::UInt(_) => "uint",
        CelValue::Float(_) => "double",
        CelValue::String(_) => "string",
        CelValue::Bytes(_) => "bytes",
        CelValue::List(_) => "list",
        CelValue::Map(_) => "map",
        _ => "a non-bool value",
    }
}

/// Error texts can span lines (parser excerpts); a finding message and a problem line want one.
fn one_line(text: &str) -> String {
    text.split_whitespace().collect::<Vec<_>>().join(" ")
}

struct Check<'e> {
    env: &'e Env,
    /// Comprehension variables in scope.
    bound: Vec<String>,
    undeclared: BTreeSet<String>,
}

impl Check<'_> {
    fn walk(&mut self, e: &IdedExpr, depth: usize, nesting: usize) -> Result<(), PredicateError> {
        if depth > MAX_DEPTH {
            return Err(PredicateError::TooDeep);
        }
        let d = depth + 1;
        match &e.expr {
            Expr::Unspecified | Expr::Literal(_) => {}
            Expr::Ident(name) => self.check_name(name),
            Expr::Select(select) => match e.expr_qualified_root() {
                Some(_) => {
                    let segments = qualified(e);
                    self.check_qualified(&segments);
                }
                None => self.walk(&select.operand, d, nesting)?,
            },
            Expr::Call(call) => {
                if let Some(target) = &call.target {
                    // A bare identifier receiver may be a namespace (`base64.encode(x)`).
                    if !matches!(target.expr, Expr::Ident(_)) {
                        self.walk(target, d, nesting)?;
                    }
                }
                for arg in &call.args {
                    self.walk(arg, d, nesting)?;
                }
            }
            Expr::List(list) => {
                for item in &list.elements {
                    self.walk(item, d, nesting)?;
                }
            }
            Expr::Map(map) => {
                for entry in &map.entries {
                    self.walk_entry(&entry.expr, d, nesting)?;
                }
            }
            Expr::Struct(s) => {
                for entry in &s.entries {
                    self.walk_entry(&entry.expr, d, nesting)?;
                }
            }
            Expr::Comprehension(c) => {
                let inner = nesting + 1;
                if inner > MAX_COMPREHENSION_NESTING {
                    return Err(PredicateError::TooManyComprehensions);
                }
                self.walk(&c.iter_range, d, nesting)?;
                self.walk(&c.accu_init, d, nesting)?;
                let before = self.bound.len();
                self.bound.push(c.iter_var.clone());
                if let Some(v2) = &c.iter_var2 {
                    self.bound.push(v2.clone());
                }
                self.bound.push(c.accu_var.clone());
                self.walk(&c.loop_cond, d, inner)?;
                self.walk(&c.loop_step, d, inner)?;
                self.walk(&c.result, d, inner)?;
                self.bound.truncate(before);
            }
        }
        Ok(())
    }

    fn walk_entry(
        &mut self,
        entry: &EntryExpr,
        depth: usize,
        nesting: usize,
    ) -> Result<(), PredicateError> {
        match entry {
            EntryExpr::MapEntry(m) => {
                self.walk(&m.key, depth, nesting)?;
                self.walk(&m.value, depth, nesting)
            }
            EntryExpr::StructField(f) => self.walk(&f.value, depth, nesting),
        }
    }

    fn check_name(&mut self, name: &str) {
        if !self.known(name) && self.env.types().find_type(name).is_none() {
            self.undeclared.insert(name.to_owned());
        }
    }

    /// `a.b.c`: fine if the root is a variable, or any prefix names a type
    /// (`google.protobuf.Duration`).
    fn check_qualified(&mut self, segments: &[&str]) {
        if self.known(segments[0]) {
            return;
        }
        let is_type = (1..=segments.len()).any(|n| {
            self.env
                .types()
                .find_type(&segments[..n].join("."))
                .is_some()
        });
        if !is_type {
            self.undeclared.insert(segments[0].to_owned());
        }
    }

    fn known(&self, name: &str) -> bool {
        let name = name.strip_prefix('.').unwrap_or(name);
        VARIABLES.contains(&name) || self.bound.iter().any(|b| b == name)
    }
}

/// `Some` when `e` is a chain of plain field selections on an identifier.
trait QualifiedRoot {
    fn expr_qualified_root(&self) -> Option<&str>;
}

impl QualifiedRoot for IdedExpr {
    fn expr_qualified_root(&self) -> Option<&str> {
        let mut expr = &self.expr;
        loop {
            match expr {
                Expr::Ident(name) => return Some(name),
                Expr::Select(s) if !s.test => expr = &s.operand.expr,
                Expr::Select(s) => {
                    // has(a.b): the operand is the name.
                    expr = &s.operand.expr;
                }
                _ => return None,
            }
        }
    }
}

fn qualified(e: &IdedExpr) -> Vec<&str> {
    let mut segments = Vec::new();
    let mut expr = &e.expr;
    loop {
        match expr {
            Expr::Ident(name) => {
                segments.push(name.as_str());
                break;
            }
            Expr::Select(s) => {
                segments.push(s.field.as_str());
                expr = &s.operand.expr;
            }
            _ => break,
        }
    }
    segments.reverse();
    segments
}

#[cfg(test)]
mod tests {
    use super::*;
    use serde_json::json;

    fn env() -> Arc<Env> {
        Arc::new(Env::stdlib())
    }

    fn eval(src: &str, old: Option<Value>, new: Option<Value>) -> Result<bool, String> {
        let env = env();
        let p = Predicate::compile(&env, src).unwrap_or_else(|e| panic!("{src}: {e}"));
        let mr = CelValue::from(HashMap::from([("iid", CelValue::Int(7))]));
        p.evaluate(
            &env,
            &Bindings {
                old: old.as_ref(),
                new: new.as_ref(),
                kind: "modify",
                file: "topics/a.yaml",
                pointer: "/topics/a/retention_days",
                entry: Some("a"),
                mr: &mr,
            },
        )
    }

    #[test]
    fn evaluates_over_json_values_of_every_type() {
        assert_eq!(
            eval("int(new) < int(old)", Some(json!(30)), Some(json!(7))),
            Ok(true)
        );
        assert_eq!(
            eval("int(new) < int(old)", Some(json!("30")), Some(json!("70"))),
            Ok(false)
        );
        assert_eq!(
            eval(
                "new == 'x' && old.startsWith('y')",
                Some(json!("yy")),
                Some(json!("x"))
            ),
            Ok(true)
        );
        assert_eq!(
            eval("old == true && !new", Some(json!(true)), Some(json!(false))),
            Ok(true)
        );
        assert_eq!(
            eval(
                "size(new) > size(old) && 3 in new",
                Some(json!([1])),
                Some(json!([1, 3]))
            ),
            Ok(true)
        );
        assert_eq!(
            eval(
                "new.replicas > old.replicas && has(new.owner)",
                Some(json!({"replicas": 1})),
                Some(json!({"replicas": 2, "owner": "x"}))
            ),
            Ok(true)
        );
        assert_eq!(
            eval("old == null && new != null", None, Some(json!(1))),
            Ok(true)
        );
        assert_eq!(
            eval("new == null", Some(json!(1)), Some(Value::Null)),
            Ok(true)
        );
        assert_eq!(eval("new > 2.5", None, Some(json!(3.5))), Ok(true));
        assert_eq!(
            eval("new == 18446744073709551615u", None, Some(json!(u64::MAX))),
            Ok(true)
        );
        assert_eq!(
            eval(
                "kind == 'modify' && file.endsWith('.yaml') && pointer.startsWith('/topics') && entry == 'a' && mr.iid == 7",
                None,
                None
            ),
            Ok(true)
        );
        assert_eq!(eval("type(new) == int", None, Some(json!(1))), Ok(true));
    }

    #[test]
    fn runtime_errors_and_non_bool_results_are_errors_not_false() {
        let e = eval("int(new) < 3", None, Some(json!("abc"))).unwrap_err();
        assert!(!e.is_empty());
        assert!(
            eval("new.missing == 1", None, Some(json!({})))
                .unwrap_err()
                .contains("missing")
        );
        assert!(
            eval("new", None, Some(json!(1)))
                .unwrap_err()
                .contains("must yield a bool, got int")
        );
        assert!(eval("1 / (new - new) == 0", None, Some(json!(1))).is_err());
    }

    #[test]
    fn load_time_checks() {
        let env = env();
        let c = |s: &str| Predicate::compile(&env, s).map(|_| ());
        assert_eq!(c("  "), Err(PredicateError::Empty));
        assert!(matches!(c("int(new) <"), Err(PredicateError::Syntax(_))));
        let long = format!("new == '{}'", "x".repeat(MAX_SOURCE_BYTES));
        assert!(matches!(c(&long), Err(PredicateError::TooLong(_))));
        assert_eq!(
            c("nwe == 1"),
            Err(PredicateError::UndeclaredName("nwe".into()))
        );
        assert_eq!(
            c("neww.x == 1"),
            Err(PredicateError::UndeclaredName("neww".into()))
        );
        assert_eq!(
            c("[1].all(x, y > 0)"),
            Err(PredicateError::UndeclaredName("y".into()))
        );
        assert_eq!(
            c("new.all(x, x > 0) && x == 1"),
            Err(PredicateError::UndeclaredName("x".into()))
        );
        assert_eq!(
            c("[1].all(a, [1].all(b, [1].all(c, c > 0)))"),
            Err(PredicateError::TooManyComprehensions)
        );
        let deep = format!("{}1{} == 1", "(1 + ".repeat(70), ")".repeat(70));
        assert_eq!(c(&deep), Err(PredicateError::TooDeep));
        // Pathological nesting within the size limit is refused without exhausting the stack.
        for hostile in [
            format!("{}true{}", "(".repeat(2000), ")".repeat(2000)),
            format!("{}1{} == 1", "[".repeat(2000), "]".repeat(2000)),
        ] {
            assert!(c(&hostile).is_err(), "{}", &hostile[..20]);
        }
        // The parser folds repeated negation, so these are harmless and allowed.
        assert!(c(&format!("{}true", "!".repeat(4000))).is_ok());
        assert!(c(&format!("{}1 == 1", "-".repeat(4000))).is_ok());
        assert!(
            c("has(new.owner) && new.all(k, k != '') && google.protobuf.Duration != int").is_ok()
        );
    }

    #[test]
    fn the_deepest_accepted_expressions_evaluate() {
        // Left-associated chains and nested parentheses just under the limit run on a test
        // thread's stack: the depth limit is what keeps the recursive evaluator safe.
        let chain = format!("{} == 61", vec!["new"; 61].join(" + "));
        assert_eq!(eval(&chain, None, Some(json!(1))), Ok(true));
        let nested = format!("{}new{} == 31", "(1 + ".repeat(30), ")".repeat(30));
        assert_eq!(eval(&nested, None, Some(json!(1))), Ok(true));
        let negations = format!("{}(new == 1)", "!".repeat(4000));
        assert_eq!(eval(&negations, None, Some(json!(1))), Ok(true));
    }

    #[test]
    fn nested_comprehensions_within_the_limit_complete() {
        assert_eq!(
            eval("size([1,2,3].map(x, [1,2,3].map(y, y))) == 3", None, None),
            Ok(true)
        );
        // Quadratic over the data, and the data is one change's value.
        let big: Vec<i64> = (0..300).collect();
        assert_eq!(
            eval("new.all(x, new.exists(y, y == x))", None, Some(json!(big))),
            Ok(true)
        );
    }
}
