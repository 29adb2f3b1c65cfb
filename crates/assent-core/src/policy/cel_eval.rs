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
//! * the syntax tree is at most [`MAX_DEPTH`](super::cel_shared::MAX_DEPTH) deep (the evaluator recurses per level, so this
//!   bounds its stack; the `cel` parser also has its own recursion limit);
//! * comprehensions (the `all`, `exists`, `exists_one`, `map`, `filter` macros) nest at most
//!   [`MAX_COMPREHENSION_NESTING`](super::cel_shared::MAX_COMPREHENSION_NESTING) deep.
//!
//! Those limits alone do not bound the work: `old` and `new` come from the merge request
//! itself (a contributor can add a file of a million values), and a chain of `map`s can
//! double a value per link (`[kind].map(x, x + x).map(x, x + x)…` is accepted by the limits
//! above and would build a string of terabytes). So every predicate also has a **worst-case
//! cost**, computed from its syntax tree by a conservative abstract evaluation (`CostModel`):
//! each sub-expression gets an upper bound on the size of its value (1 per scalar, per list
//! or map entry and per byte of a string) and on the work to compute it (a function call
//! costs the sizes of its arguments; a comprehension costs its body once per element of its
//! range). The bound is checked twice against [`MAX_COST`]:
//!
//! * at load time with every variable of size 1: a predicate over even the smallest inputs
//!   that could exceed it is a load problem ([`PredicateError::TooCostly`]);
//! * before every evaluation, with the real sizes of the bound values: an evaluation that
//!   could exceed it is not run and is an evaluation error (so a `block` finding naming the
//!   rule, never a silent "did not fire", never a hang).
//!
//! The bound is deterministic (a function of the expression and the sizes only, no clock),
//! so the same change gives the same decision on every run.
//!
//! # The run's budget
//!
//! The per-evaluation bound does not bound a run: a predicate just under it, matched by
//! thousands of changes, is thousands of times that work. So every evaluation is also
//! **charged** to a [`CelBudget`] shared by the whole run: its cost bound plus the sizes of
//! `old` and `new` (converting them to CEL values is work too). The charge is counted in the
//! same abstract steps as [`MAX_COST`], never in time, so the core stays pure and the same
//! inputs spend the same budget on every run. Once an evaluation does not fit in what is left
//! ([`EvalError::BudgetSpent`]), the budget is spent and no further evaluation of the run is
//! performed; the caller turns the rules it could not evaluate into `assent/undecidable`
//! findings (fail closed). [`RUN_BUDGET`] is the default.
//!
//! Identifiers are checked at load time too: a name that is neither one of the variables
//! above, a comprehension variable nor a CEL type name (`int`, `string`, …) is a problem,
//! so a typo such as `nwe` is reported by `assent lint` instead of blocking every MR.
//! (A bare receiver of a method call, such as `x` in `x.startsWith("a")`, is not checked:
//! it may be a function namespace; an undeclared one still fails at run time.) What else is
//! certain to fail (unknown functions, operators on types they do not take, constant parts
//! that always fail) is checked by [`super::cel_types`]; [`Predicate::compile_all`] reports
//! every such problem of a predicate.

use std::collections::{BTreeSet, HashMap};
use std::sync::Arc;

use super::cel_cost::{self, Sizes, within_budget};
use super::cel_shared::{Bindings, MAX_COST, MAX_SOURCE_BYTES, one_line};
use super::cel_types::PredicateError;
use super::{cel_limits, cel_types};

use cel::objects::Key;
use cel::{Context, Env, Program, Value as CelValue};
use serde_json::Value;

/// Default CEL work of one run, in the steps of [`MAX_COST`]: ten evaluations at the
/// per-evaluation limit (about 28 s of the worst work measured, release build, 2 cores).
/// Real registries use a small fraction of it (`docs/policies.md`, "The CEL budget").
pub const RUN_BUDGET: f64 = 1e9;

/// Why one evaluation did not give a bool.
#[derive(Debug, Clone, PartialEq, thiserror::Error)]
pub enum EvalError {
    /// The worst-case cost on this change's values exceeds [`MAX_COST`]: not evaluated.
    #[error(
        "`when` could cost up to {cost:.1e} steps on this change (old and new hold {values} values); the limit is {MAX_COST:e}: narrow `match.pointer` or avoid nested comprehensions over whole documents"
    )]
    TooCostly {
        /// The cost bound on this change.
        cost: f64,
        /// The sizes of `old` and `new` together.
        values: f64,
    },
    /// The predicate yielded something else than a bool.
    #[error("`when` must yield a bool, got {0}")]
    NotBool(&'static str),
    /// The CEL evaluator failed (a type error, a missing field, a division by zero, …).
    #[error("{0}")]
    Runtime(String),
    /// The run's [`CelBudget`] has no room for this evaluation: not evaluated.
    #[error("the run's CEL budget of {limit:e} steps is spent")]
    BudgetSpent {
        /// The budget's limit.
        limit: f64,
    },
}

/// The CEL work one run may do, in the steps of [`MAX_COST`] (see "The run's budget" in
/// the module docs). Once an evaluation does not fit, the budget is spent for good: later
/// evaluations are refused even when they would fit, so what is judged never depends on
/// which cheap evaluations happen to come after an expensive one.
#[derive(Debug, Clone, Copy, PartialEq)]
pub struct CelBudget {
    limit: f64,
    spent: f64,
    exhausted: bool,
}

impl CelBudget {
    /// A budget of `limit` steps (a run uses [`RUN_BUDGET`]; tests pass small ones).
    pub fn new(limit: f64) -> Self {
        CelBudget {
            limit,
            spent: 0.0,
            exhausted: false,
        }
    }

    /// The limit it was created with.
    pub fn limit(&self) -> f64 {
        self.limit
    }

    /// The steps charged so far.
    pub fn spent(&self) -> f64 {
        self.spent
    }

    /// Whether an evaluation has been refused: no further evaluation is performed.
    pub fn is_exhausted(&self) -> bool {
        self.exhausted
    }

    /// Charges `steps` when they fit in what is left; otherwise marks the budget spent.
    fn charge(&mut self, steps: f64) -> Result<(), EvalError> {
        // `NaN` (an overflowed bound) never fits.
        if !self.exhausted && self.spent + steps <= self.limit {
            self.spent += steps;
            return Ok(());
        }
        self.exhausted = true;
        Err(EvalError::BudgetSpent { limit: self.limit })
    }
}

impl Default for CelBudget {
    /// [`RUN_BUDGET`].
    fn default() -> Self {
        CelBudget::new(RUN_BUDGET)
    }
}

/// A compiled `when` predicate.
#[derive(Debug)]
pub struct Predicate {
    program: Program,
}

impl Predicate {
    /// Compiles and checks `source` against the limits documented on this module; the first
    /// problem of [`Predicate::compile_all`].
    pub fn compile(env: &Arc<Env>, source: &str) -> Result<Self, PredicateError> {
        Self::compile_all(env, source).map_err(|mut errors| errors.remove(0))
    }

    /// Compiles and checks `source`: its syntax and size, the limits documented on this
    /// module, its names, and what [`cel_types`] can tell fails before it runs. On failure,
    /// every problem found (never empty): a syntax, size or nesting problem alone, otherwise
    /// each undeclared name, then each certain failure, then the cost.
    pub fn compile_all(env: &Arc<Env>, source: &str) -> Result<Self, Vec<PredicateError>> {
        if source.trim().is_empty() {
            return Err(vec![PredicateError::Empty]);
        }
        if source.len() > MAX_SOURCE_BYTES {
            return Err(vec![PredicateError::TooLong(source.len())]);
        }
        let program = env
            .compile(source)
            .map_err(|e| vec![PredicateError::Syntax(syntax_errors(&e, source))])?;
        let undeclared =
            cel_limits::undeclared_names(env, program.expression()).map_err(|e| vec![e])?;
        let mut errors: Vec<PredicateError> = undeclared
            .into_iter()
            .map(PredicateError::UndeclaredName)
            .collect();
        errors.extend(cel_types::check(env, program.expression()));
        let predicate = Predicate { program };
        if !within_budget(predicate.cost_bound(&Sizes::ONE)) {
            errors.push(PredicateError::TooCostly);
        }
        if errors.is_empty() {
            Ok(predicate)
        } else {
            Err(errors)
        }
    }

    /// The fields of `mr` this predicate reads ([`cel_types::mr_fields_read`]).
    pub fn mr_fields(&self) -> BTreeSet<&'static str> {
        cel_types::mr_fields_read(self.program.expression())
    }

    /// The worst-case cost of one evaluation with variables of the given sizes (see the
    /// module docs); `inf` or `NaN` when it overflows.
    fn cost_bound(&self, sizes: &Sizes) -> f64 {
        cel_cost::cost_bound(self.program.expression(), sizes)
    }

    /// Evaluates, charging the work to `budget` first. Not evaluated (and nothing charged)
    /// when the cost bound on these values exceeds [`MAX_COST`] or does not fit in the
    /// budget; a run-time error or a non-bool is an error too, never `false`.
    pub fn evaluate(
        &self,
        env: &Arc<Env>,
        b: &Bindings<'_>,
        budget: &mut CelBudget,
    ) -> Result<bool, EvalError> {
        if budget.is_exhausted() {
            return Err(EvalError::BudgetSpent {
                limit: budget.limit(),
            });
        }
        let sizes = Sizes::of(b);
        let cost = self.cost_bound(&sizes);
        if !within_budget(cost) {
            return Err(EvalError::TooCostly {
                cost,
                values: sizes.old + sizes.new,
            });
        }
        budget.charge(cost + sizes.old + sizes.new)?;
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
            Ok(other) => Err(EvalError::NotBool(type_name(&other))),
            Err(e) => Err(EvalError::Runtime(one_line(&e.to_string()))),
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
/// The parser's errors as one line a policy author can act on: where (the column, and the
/// line when the predicate has several), what, and the predicate itself; not the parser's own
/// rendering, which spans three lines with a caret under an `<input>` name.
fn syntax_errors(errors: &cel::ParseErrors, source: &str) -> String {
    let multiline = source.trim_end().contains('\n');
    let each: Vec<String> = errors
        .errors
        .iter()
        .map(|e| {
            let (line, column) = e.pos;
            let msg = one_line(&e.msg).replace("'<EOF>'", "the end");
            let what = msg.strip_prefix("Syntax error: ").unwrap_or(&msg);
            if multiline {
                format!("line {line}, column {column}: {what}")
            } else {
                format!("column {column}: {what}")
            }
        })
        .collect();
    format!("{} in `{}`", each.join("; "), one_line(source))
}

#[cfg(test)]
mod tests {
    use super::*;
    use serde_json::json;

    fn env() -> Arc<Env> {
        Arc::new(Env::stdlib())
    }

    fn eval(src: &str, old: Option<Value>, new: Option<Value>) -> Result<bool, String> {
        eval_charged(src, old, new, &mut CelBudget::default()).map_err(|e| e.to_string())
    }

    fn eval_charged(
        src: &str,
        old: Option<Value>,
        new: Option<Value>,
        budget: &mut CelBudget,
    ) -> Result<bool, EvalError> {
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
            budget,
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
    fn a_syntax_error_is_one_line_with_its_column_and_the_predicate() {
        let error = |source: &str| match Predicate::compile(&env(), source) {
            Err(e) => e.to_string(),
            Ok(_) => panic!("{source:?} compiled"),
        };
        assert_eq!(
            error("int(new) < int(old"),
            "`when` does not compile: column 19: missing ')' at the end in `int(new) < int(old`"
        );
        let multi = error("int(new) <\n  int(old) &&");
        assert!(
            multi.starts_with("`when` does not compile: line 2, column "),
            "{multi}"
        );
        assert!(
            !multi.contains('\n') && !multi.contains("<input>"),
            "{multi}"
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

    #[test]
    fn a_chain_that_doubles_a_value_is_refused_at_load() {
        // 40 links would build a string of 6 * 2^40 bytes; depth and nesting limits allow it.
        let chain = format!("size([kind]{}) > 0", ".map(x, x + x)".repeat(40));
        assert_eq!(
            Predicate::compile(&env(), &chain).unwrap_err(),
            PredicateError::TooCostly
        );
        // A short chain is fine.
        let short = format!("size([kind]{}) == 1", ".map(x, x + x)".repeat(3));
        assert_eq!(eval(&short, None, None), Ok(true));
    }

    #[test]
    fn work_beyond_the_cost_limit_is_an_evaluation_error_not_a_hang() {
        // Quadratic over contributor data: a 100,000-element list would take 10^10 steps.
        let uniq = "new.all(x, new.exists_one(y, y == x))";
        let big: Vec<i64> = (0..100_000).collect();
        let err = eval(uniq, None, Some(json!(big))).unwrap_err();
        assert!(err.contains("could cost up to"), "{err}");
        assert!(err.contains("the limit is 1e8"), "{err}");
        // The same rule on a small value runs.
        assert_eq!(eval(uniq, None, Some(json!([1, 2, 3]))), Ok(true));
        // Linear work over the same large list is within the limit.
        assert_eq!(
            eval(
                "new.all(x, x >= 0) && size(new.map(x, x + 1)) == 100000",
                None,
                Some(json!(big))
            ),
            Ok(true)
        );
    }

    #[test]
    fn every_evaluation_is_charged_its_bound_and_the_sizes_of_old_and_new() {
        let mut budget = CelBudget::new(1e6);
        assert_eq!(
            eval_charged(
                "int(new) < int(old)",
                Some(json!(30)),
                Some(json!(7)),
                &mut budget
            ),
            Ok(true)
        );
        let one = budget.spent();
        assert!(one > 2.0 && one < 100.0, "{one}");
        // The same evaluation charges the same amount: the budget is a count, not a clock.
        eval_charged(
            "int(new) < int(old)",
            Some(json!(30)),
            Some(json!(7)),
            &mut budget,
        )
        .unwrap();
        assert_eq!(budget.spent(), 2.0 * one);
        // Larger values cost more, in proportion to their size.
        let mut linear = CelBudget::new(1e9);
        let big: Vec<i64> = (0..10_000).collect();
        eval_charged("new.all(x, x >= 0)", None, Some(json!(big)), &mut linear).unwrap();
        assert!(linear.spent() > 20_000.0, "{}", linear.spent());
        assert!(!linear.is_exhausted());
    }

    #[test]
    fn an_evaluation_that_does_not_fit_is_refused_and_the_budget_stays_spent() {
        let big: Vec<i64> = (0..1_000).collect();
        let mut budget = CelBudget::new(10_000.0);
        let quadratic = "new.all(x, new.exists(y, y == x))";
        // Within the per-evaluation limit, but not within this budget.
        assert_eq!(
            eval_charged(quadratic, None, Some(json!(big)), &mut budget),
            Err(EvalError::BudgetSpent { limit: 10_000.0 })
        );
        assert!(budget.is_exhausted());
        assert_eq!(budget.spent(), 0.0, "a refused evaluation is not charged");
        // A cheap evaluation that would fit is refused too: the budget is spent for good.
        assert_eq!(
            eval_charged("new == 1", None, Some(json!(1)), &mut budget),
            Err(EvalError::BudgetSpent { limit: 10_000.0 })
        );
        let message = EvalError::BudgetSpent { limit: 1e9 }.to_string();
        assert_eq!(message, "the run's CEL budget of 1e9 steps is spent");
    }

    #[test]
    fn the_per_evaluation_limit_is_checked_before_the_budget_and_charges_nothing() {
        let big: Vec<i64> = (0..100_000).collect();
        let mut budget = CelBudget::new(1e12);
        let err = eval_charged(
            "new.all(x, new.exists_one(y, y == x))",
            None,
            Some(json!(big)),
            &mut budget,
        )
        .unwrap_err();
        assert!(matches!(err, EvalError::TooCostly { .. }), "{err}");
        assert_eq!(budget.spent(), 0.0);
        assert!(
            !budget.is_exhausted(),
            "an over-limit evaluation leaves the budget"
        );
        // Filling the budget exactly is allowed; one step more is not.
        let mut exact = CelBudget::new(0.0);
        assert!(exact.charge(0.0).is_ok());
        assert!(exact.charge(1.0).is_err());
        assert!(CelBudget::new(1.0).charge(f64::NAN).is_err());
        assert_eq!(CelBudget::default().limit(), RUN_BUDGET);
    }
}
