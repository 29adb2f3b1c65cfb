//! What can be known of a `when` predicate before it runs: functions that do not exist,
//! operators applied to types they do not take, parts that fail whatever the change, a result
//! that is never a bool.
//!
//! A predicate that fails at run time is never read as `false`: it blocks every merge request
//! it matches ([`super::cel_eval`]). So a mistake such as `new < "abc" + 1` should be a load
//! problem (`assent lint`, and `assent/policy-error` in a run) instead. The `cel` crate has
//! no type checker, so this module is one, deliberately **conservative**: it reports only what
//! is certain to fail whenever the part is evaluated, and never rejects a predicate that can
//! evaluate. It does not decide anything by itself; it asks the `cel` runtime:
//!
//! * **Types** are inferred bottom-up: literals, `kind`/`file`/`pointer` (strings), the `mr`
//!   map and its fields, and the results of functions whose result type is fixed (`size` is
//!   an int, comparisons are bools, …). `old`, `new`, `entry`, comprehension variables and
//!   anything unsure are *dynamic* and never reported.
//! * **An operator or function applied to known scalar types** is evaluated once on sample
//!   values of those types (`1`, `"a"`, `true`, …) by the same runtime that evaluates rules.
//!   Only errors that depend on the types alone are reported (no such overload, unsupported
//!   operator, unknown function); errors that depend on values (division by zero, a string
//!   that is no number) are not, since a real value could differ from the sample.
//! * **A function name** the runtime does not know at all (`sizee(new)`,
//!   `new.startswith('a')`) fails on every value: reported, with the closest known name.
//! * **A part without variables** (`"abc" + 1`, `int("x")`, `1 / 0`) is evaluated once, when
//!   its worst-case cost is small; any error there is certain.
//! * **`mr.<field>`** must be one of its fields (reading a missing key fails), and a
//!   predicate whose result type is known must be a bool.
//!
//! The checks run after the syntax and depth checks of [`super::cel_eval`], so the recursion
//! here is bounded by [`super::cel_shared::MAX_DEPTH`]. [`PredicateError`], why a predicate
//! is refused at load time, is here, where most of its kinds are found.

use std::collections::BTreeSet;
use std::sync::Arc;

use cel::common::ast::{EntryExpr, Expr, IdedEntryExpr, IdedExpr, LiteralValue, operators};
use cel::{Context, Env, ExecutionError, Value as CelValue};

use super::cel_cost::cost_of;
use super::cel_shared::{
    MAX_COMPREHENSION_NESTING, MAX_COST, MAX_DEPTH, MAX_SOURCE_BYTES, VARIABLES, one_line,
};
use super::suggest;

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
    /// The worst-case cost exceeds [`MAX_COST`] even with every variable of size 1.
    #[error(
        "`when` could cost more than {MAX_COST:e} steps even on the smallest inputs (a chain of map/filter that grows a value, or nested comprehensions over large literals)"
    )]
    TooCostly,
    /// An identifier that is no variable.
    #[error(
        "`when` uses undeclared name `{0}` (variables: old, new, kind, file, pointer, entry, mr){hint}",
        hint = suggest::hint(.0, &VARIABLES)
    )]
    UndeclaredName(String),
    /// A function the runtime does not know, as a method or a global.
    #[error(
        "`when` calls unknown function `{0}`{hint}",
        hint = suggest::hint(.0, &KNOWN_FUNCTIONS)
    )]
    UnknownFunction(String),
    /// `mr.<field>` for a field `mr` does not have.
    #[error(
        "`when` reads `mr.{0}`, which does not exist (mr has iid, title, source_branch, target_branch, author, labels){hint}",
        hint = suggest::hint(.0, &MR_FIELDS.map(|(field, _)| field))
    )]
    UnknownMrField(String),
    /// An operator or function applied to types it does not take.
    #[error(
        "`when` applies `{operator}` to {operands}, which CEL does not define: every evaluation would fail"
    )]
    Mismatch {
        /// The operator or function as written (`+`, `size()`, `.startsWith()`).
        operator: String,
        /// The operand types, the receiver first (`string and int`).
        operands: String,
    },
    /// The predicate's result type is known and is not bool.
    #[error("`when` must yield a bool, but it yields {0} on every change")]
    NotBool(&'static str),
    /// The condition of `c ? a : b` is known not to be a bool.
    #[error("the condition of `? :` in `when` is {0}, never a bool")]
    ConditionNotBool(&'static str),
    /// A part without variables fails whenever it is evaluated.
    #[error("`when` holds a part without variables that always fails: {0}")]
    AlwaysFails(String),
}

/// The fields of the `mr` variable and their types.
pub const MR_FIELDS: [(&str, Ty); 6] = [
    // An iid is an int, or a uint beyond i64: either way a number of unknown kind.
    ("iid", Ty::Dyn),
    ("title", Ty::String),
    ("source_branch", Ty::String),
    ("target_branch", Ty::String),
    ("author", Ty::String),
    ("labels", Ty::List),
];

/// Names offered as "did you mean" for an unknown function: the standard functions and
/// macros. Only a hint: whether a function exists is asked of the runtime.
pub const KNOWN_FUNCTIONS: [&str; 21] = [
    "size",
    "int",
    "uint",
    "double",
    "string",
    "bytes",
    "bool",
    "type",
    "dyn",
    "contains",
    "startsWith",
    "endsWith",
    "matches",
    "timestamp",
    "duration",
    "has",
    "all",
    "exists",
    "exists_one",
    "map",
    "filter",
];

/// Largest worst-case cost of a part without variables that is evaluated at load time.
const MAX_CONSTANT_COST: f64 = 1e4;

/// What is known of the type of a sub-expression's value.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Ty {
    /// Unknown: anything (JSON values, comprehension variables, unsure results).
    Dyn,
    /// `null`.
    Null,
    /// A bool.
    Bool,
    /// A signed integer.
    Int,
    /// An unsigned integer.
    UInt,
    /// A double.
    Double,
    /// A string.
    String,
    /// Bytes.
    Bytes,
    /// A list.
    List,
    /// A map (other than `mr`).
    Map,
    /// A type value (`int`, `string`, …).
    Type,
    /// The `mr` map, whose fields are known.
    Mr,
}

impl Ty {
    /// The type's name in CEL.
    pub fn name(self) -> &'static str {
        match self {
            Ty::Dyn => "dyn",
            Ty::Null => "null",
            Ty::Bool => "bool",
            Ty::Int => "int",
            Ty::UInt => "uint",
            Ty::Double => "double",
            Ty::String => "string",
            Ty::Bytes => "bytes",
            Ty::List => "list",
            Ty::Map | Ty::Mr => "map",
            Ty::Type => "type",
        }
    }

    /// A value of this type for asking the runtime, for the scalar types.
    fn sample(self) -> Option<CelValue> {
        Some(match self {
            Ty::Null => CelValue::Null,
            Ty::Bool => CelValue::Bool(true),
            Ty::Int => CelValue::Int(1),
            Ty::UInt => CelValue::UInt(1),
            Ty::Double => CelValue::Float(1.0),
            Ty::String => CelValue::from("a"),
            Ty::Bytes => CelValue::Bytes(Arc::new(b"a".to_vec())),
            _ => return None,
        })
    }

    fn of_value(value: &CelValue) -> Ty {
        match value {
            CelValue::Null => Ty::Null,
            CelValue::Bool(_) => Ty::Bool,
            CelValue::Int(_) => Ty::Int,
            CelValue::UInt(_) => Ty::UInt,
            CelValue::Float(_) => Ty::Double,
            CelValue::String(_) => Ty::String,
            CelValue::Bytes(_) => Ty::Bytes,
            CelValue::List(_) => Ty::List,
            CelValue::Map(_) => Ty::Map,
            _ => Ty::Dyn,
        }
    }

    fn is_known(self) -> bool {
        self != Ty::Dyn
    }
}

/// Functions whose result type is fixed whatever their arguments (when they succeed).
fn fixed_result(name: &str) -> Option<Ty> {
    Some(match name {
        operators::EQUALS
        | operators::NOT_EQUALS
        | operators::LESS
        | operators::LESS_EQUALS
        | operators::GREATER
        | operators::GREATER_EQUALS
        | operators::LOGICAL_AND
        | operators::LOGICAL_OR
        | operators::LOGICAL_NOT
        | operators::NOT_STRICTLY_FALSE
        | operators::IN
        | "contains"
        | "startsWith"
        | "endsWith"
        | "matches"
        | "bool" => Ty::Bool,
        "size" | "int" => Ty::Int,
        "uint" => Ty::UInt,
        "double" => Ty::Double,
        "string" => Ty::String,
        "bytes" => Ty::Bytes,
        "type" => Ty::Type,
        _ => return None,
    })
}

/// Functions whose result type is determined by their argument types: asked of the runtime
/// on samples, the sample result's type is the result's type.
const TYPED_BY_ARGUMENTS: [&str; 6] = [
    operators::ADD,
    operators::SUBSTRACT,
    operators::MULTIPLY,
    operators::DIVIDE,
    operators::MODULO,
    operators::NEGATE,
];

/// How an operator or function is written, for a message.
fn written(name: &str, member: bool) -> String {
    let symbol = match name {
        operators::ADD => "+",
        operators::SUBSTRACT => "-",
        operators::MULTIPLY => "*",
        operators::DIVIDE => "/",
        operators::MODULO => "%",
        operators::LESS => "<",
        operators::LESS_EQUALS => "<=",
        operators::GREATER => ">",
        operators::GREATER_EQUALS => ">=",
        operators::IN => "in",
        operators::LOGICAL_NOT => "!",
        operators::NEGATE => "unary -",
        operators::INDEX => "[]",
        operators::LOGICAL_AND => "&&",
        operators::LOGICAL_OR => "||",
        _ if member => return format!(".{name}()"),
        _ => return format!("{name}()"),
    };
    symbol.to_owned()
}

/// Whether a runtime error depends only on the types involved, never on the values.
#[allow(deprecated)]
fn is_type_error(error: &ExecutionError) -> bool {
    matches!(
        error,
        ExecutionError::NoSuchOverload(_)
            | ExecutionError::UnsupportedBinaryOperator(..)
            | ExecutionError::UnsupportedUnaryOperator(..)
            | ExecutionError::NotSupportedAsMethod { .. }
            | ExecutionError::UnsupportedTargetType { .. }
            | ExecutionError::UnexpectedType { .. }
            | ExecutionError::InvalidArgumentCount { .. }
            | ExecutionError::MissingArgumentOrTarget
            | ExecutionError::UndeclaredReference(_)
    )
}

/// Every certain failure of the predicate `expr` (see the module docs), in the order found,
/// without repeats.
pub fn check(env: &Arc<Env>, expr: &IdedExpr) -> Vec<PredicateError> {
    let mut checker = Checker {
        env,
        scope: Vec::new(),
        errors: Vec::new(),
    };
    let result = checker.infer(expr);
    if result.is_known() && result != Ty::Bool {
        checker.report(PredicateError::NotBool(result.name()));
    }
    checker.constants(expr);
    checker.errors
}

/// The fields of `mr` the predicate `expr` reads, as named in [`MR_FIELDS`]: each
/// `mr.<field>` (a `has(mr.<field>)` test too), and every field when `mr` is read any other
/// way (`mr["title"]`, `"title" in mr`, `mr == {}`), since which one is then unknown. A
/// comprehension variable named `mr` counts as `mr`: more fields, never fewer.
pub fn mr_fields_read(expr: &IdedExpr) -> BTreeSet<&'static str> {
    let mut fields = BTreeSet::new();
    collect_mr_fields(expr, &mut fields);
    fields
}

fn collect_mr_fields(e: &IdedExpr, fields: &mut BTreeSet<&'static str>) {
    match &e.expr {
        Expr::Select(select) if matches!(&select.operand.expr, Expr::Ident(name) if name == "mr") =>
        {
            // An unknown field is a load problem, so a loaded predicate names known ones.
            fields.extend(
                MR_FIELDS
                    .iter()
                    .map(|(field, _)| *field)
                    .filter(|field| *field == select.field),
            );
        }
        Expr::Ident(name) if name == "mr" => {
            fields.extend(MR_FIELDS.iter().map(|(field, _)| *field));
        }
        _ => {
            for child in children(e) {
                collect_mr_fields(child, fields);
            }
        }
    }
}

struct Checker<'e> {
    env: &'e Arc<Env>,
    /// Comprehension variables in scope with their types, innermost last.
    scope: Vec<(String, Ty)>,
    errors: Vec<PredicateError>,
}

impl Checker<'_> {
    fn report(&mut self, error: PredicateError) {
        if !self.errors.contains(&error) {
            self.errors.push(error);
        }
    }

    fn bound(&self, name: &str) -> Option<Ty> {
        self.scope
            .iter()
            .rev()
            .find(|(n, _)| n == name)
            .map(|(_, ty)| *ty)
    }

    fn infer(&mut self, e: &IdedExpr) -> Ty {
        match &e.expr {
            Expr::Unspecified => Ty::Dyn,
            Expr::Literal(literal) => match literal {
                LiteralValue::Boolean(_) => Ty::Bool,
                LiteralValue::Bytes(_) => Ty::Bytes,
                LiteralValue::Double(_) => Ty::Double,
                LiteralValue::Int(_) => Ty::Int,
                LiteralValue::Null => Ty::Null,
                LiteralValue::String(_) => Ty::String,
                LiteralValue::UInt(_) => Ty::UInt,
            },
            Expr::Ident(name) => self.ident(name),
            Expr::Select(select) => {
                let operand = self.infer(&select.operand);
                if select.test {
                    return Ty::Bool;
                }
                if operand == Ty::Mr {
                    match MR_FIELDS.iter().find(|(field, _)| *field == select.field) {
                        Some((_, ty)) => return *ty,
                        None => self.report(PredicateError::UnknownMrField(select.field.clone())),
                    }
                }
                Ty::Dyn
            }
            Expr::List(list) => {
                for item in &list.elements {
                    self.infer(item);
                }
                Ty::List
            }
            Expr::Map(map) => {
                for entry in &map.entries {
                    self.entry(&entry.expr);
                }
                Ty::Map
            }
            Expr::Struct(s) => {
                for entry in &s.entries {
                    self.entry(&entry.expr);
                }
                Ty::Dyn
            }
            Expr::Comprehension(c) => {
                self.infer(&c.iter_range);
                let init = self.infer(&c.accu_init);
                let before = self.scope.len();
                self.scope.push((c.iter_var.clone(), Ty::Dyn));
                if let Some(v2) = &c.iter_var2 {
                    self.scope.push((v2.clone(), Ty::Dyn));
                }
                // The standard macros keep their accumulator's type (a bool for all/exists,
                // an int for exists_one, a list for map/filter): assumed while the step is
                // inferred, kept only when the step confirms it.
                self.scope.push((c.accu_var.clone(), init));
                self.infer(&c.loop_cond);
                let step = self.infer(&c.loop_step);
                self.scope.truncate(before);
                let accu = if step == init { init } else { Ty::Dyn };
                self.scope.push((c.accu_var.clone(), accu));
                let result = self.infer(&c.result);
                self.scope.truncate(before);
                result
            }
            Expr::Call(call) => {
                let name = call.func_name.as_str();
                match (name, call.args.as_slice()) {
                    (operators::CONDITIONAL, [condition, then, otherwise]) => {
                        let condition = self.infer(condition);
                        if condition.is_known() && condition != Ty::Bool {
                            self.report(PredicateError::ConditionNotBool(condition.name()));
                        }
                        let (then, otherwise) = (self.infer(then), self.infer(otherwise));
                        if then == otherwise { then } else { Ty::Dyn }
                    }
                    (operators::LOGICAL_AND | operators::LOGICAL_OR, [left, right]) => {
                        // `error && false` is false: only two non-bools certainly fail.
                        let (l, r) = (self.infer(left), self.infer(right));
                        if [l, r].iter().all(|t| t.is_known() && *t != Ty::Bool) {
                            self.report(PredicateError::Mismatch {
                                operator: written(name, false),
                                operands: format!("{} and {}", l.name(), r.name()),
                            });
                        }
                        Ty::Bool
                    }
                    (operators::OPT_INDEX | operators::OPT_SELECT, _) => {
                        for arg in &call.args {
                            self.infer(arg);
                        }
                        Ty::Dyn
                    }
                    _ => self.call(e, name),
                }
            }
        }
    }

    fn entry(&mut self, entry: &EntryExpr) {
        match entry {
            EntryExpr::MapEntry(m) => {
                self.infer(&m.key);
                self.infer(&m.value);
            }
            EntryExpr::StructField(f) => {
                self.infer(&f.value);
            }
        }
    }

    fn ident(&self, name: &str) -> Ty {
        if let Some(ty) = self.bound(name) {
            return ty;
        }
        match name.strip_prefix('.').unwrap_or(name) {
            "kind" | "file" | "pointer" => Ty::String,
            "mr" => Ty::Mr,
            name if VARIABLES.contains(&name) => Ty::Dyn,
            name if self.env.types().find_type(name).is_some() => Ty::Type,
            _ => Ty::Dyn,
        }
    }

    /// A call other than the lazy operators: the function must exist, and on known scalar
    /// types it must accept them.
    fn call(&mut self, e: &IdedExpr, name: &str) -> Ty {
        let Expr::Call(call) = &e.expr else {
            return Ty::Dyn;
        };
        let target = match &call.target {
            // `optional.of(x)`, `base64.encode(x)`: a name that is no variable may be a
            // function namespace, which only the runtime resolves.
            Some(target) if self.is_namespace_like(target) => {
                for arg in &call.args {
                    self.infer(arg);
                }
                return Ty::Dyn;
            }
            Some(target) => Some(self.infer(target)),
            None => None,
        };
        let args: Vec<Ty> = call.args.iter().map(|a| self.infer(a)).collect();
        let member = target.is_some();
        let operator = name.starts_with('_') || name.starts_with('@') || name.ends_with('_');
        if !operator && !self.function_exists(name, member, args.len()) {
            self.report(PredicateError::UnknownFunction(name.to_owned()));
            return Ty::Dyn;
        }
        let types: Vec<Ty> = target.into_iter().chain(args.iter().copied()).collect();
        let samples: Option<Vec<CelValue>> = types.iter().map(|t| t.sample()).collect();
        if let Some(samples) = samples {
            match self.run(name, member, samples) {
                Err(error) if is_type_error(&error) => {
                    let operands: Vec<&str> = types.iter().map(|t| t.name()).collect();
                    self.report(PredicateError::Mismatch {
                        operator: written(name, member),
                        operands: operands.join(" and "),
                    });
                    return Ty::Dyn;
                }
                Ok(value) if TYPED_BY_ARGUMENTS.contains(&name) => return Ty::of_value(&value),
                _ => {}
            }
        }
        if name == operators::ADD && types == [Ty::List, Ty::List] {
            return Ty::List;
        }
        fixed_result(name).unwrap_or(Ty::Dyn)
    }

    /// `name(…)` or `x.name(…)` with `values` (the target first for a member call) bound to
    /// names no expression can spell.
    fn run(
        &self,
        name: &str,
        member: bool,
        values: Vec<CelValue>,
    ) -> Result<CelValue, ExecutionError> {
        let mut ctx = Context::with_env(Arc::clone(self.env));
        let mut names = Vec::new();
        for (index, value) in values.into_iter().enumerate() {
            let bound = format!("@sample{index}");
            ctx.add_variable_from_value(bound.clone(), value);
            names.push(bound);
        }
        let ident = |name: &String| IdedExpr {
            id: 0,
            expr: Expr::Ident(name.clone()),
        };
        let (target, args) = if member {
            (Some(Box::new(ident(&names[0]))), &names[1..])
        } else {
            (None, &names[..])
        };
        let expr = IdedExpr {
            id: 0,
            expr: Expr::Call(cel::common::ast::CallExpr {
                func_name: name.to_owned(),
                target,
                args: args.iter().map(ident).collect(),
            }),
        };
        ctx.resolve(&expr)
    }

    /// Whether the runtime knows a function `name` at all, as a method or a global: asked
    /// with `null` arguments, an unknown name is an undeclared reference whatever the types.
    fn function_exists(&self, name: &str, member: bool, arity: usize) -> bool {
        let values = vec![CelValue::Null; arity + usize::from(member)];
        !matches!(
            self.run(name, member, values),
            Err(ExecutionError::UndeclaredReference(reference)) if reference.as_str() == name
        )
    }

    /// A receiver that is a bare name, or a chain of fields on one, whose root is neither a
    /// variable nor a comprehension variable.
    fn is_namespace_like(&self, target: &IdedExpr) -> bool {
        let mut expr = &target.expr;
        loop {
            match expr {
                Expr::Ident(name) => {
                    let name = name.strip_prefix('.').unwrap_or(name);
                    return !VARIABLES.contains(&name) && self.bound(name).is_none();
                }
                Expr::Select(s) if !s.test => expr = &s.operand.expr,
                _ => return false,
            }
        }
    }

    /// Evaluates each largest part without variables once (when cheap): an error there is
    /// certain whenever the part is evaluated. A type error there was already reported with
    /// its operator by [`Checker::call`], unless a list or map hid the types from it.
    fn constants(&mut self, e: &IdedExpr) {
        if constant(e, &mut Vec::new()) {
            if !matches!(e.expr, Expr::Literal(_)) && cost_of(e) <= MAX_CONSTANT_COST {
                let ctx = Context::with_env(Arc::clone(self.env));
                if let Err(error) = ctx.resolve(e) {
                    let seen = self.errors.iter().any(|e| {
                        matches!(
                            e,
                            PredicateError::Mismatch { .. } | PredicateError::UnknownFunction(_)
                        )
                    });
                    if !(is_type_error(&error) && seen) {
                        self.report(PredicateError::AlwaysFails(one_line(&error.to_string())));
                    }
                }
            }
            return;
        }
        for child in children(e) {
            self.constants(child);
        }
    }
}

/// Whether `e` reads no name other than the comprehension variables in `bound`.
fn constant<'a>(e: &'a IdedExpr, bound: &mut Vec<&'a str>) -> bool {
    match &e.expr {
        Expr::Unspecified => false,
        Expr::Literal(_) => true,
        Expr::Ident(name) => bound.contains(&name.as_str()),
        Expr::Comprehension(c) => {
            if !constant(&c.iter_range, bound) || !constant(&c.accu_init, bound) {
                return false;
            }
            let before = bound.len();
            bound.push(&c.iter_var);
            if let Some(v2) = &c.iter_var2 {
                bound.push(v2);
            }
            bound.push(&c.accu_var);
            let inner = [&c.loop_cond, &c.loop_step, &c.result]
                .into_iter()
                .all(|part| constant(part, bound));
            bound.truncate(before);
            inner
        }
        _ => children(e).into_iter().all(|child| constant(child, bound)),
    }
}

/// The keys and values of a map's or a struct's entries.
fn entry_children(entries: &[IdedEntryExpr]) -> Vec<&IdedExpr> {
    entries
        .iter()
        .flat_map(|entry| match &entry.expr {
            EntryExpr::MapEntry(m) => vec![&m.key, &m.value],
            EntryExpr::StructField(f) => vec![&f.value],
        })
        .collect()
}

/// The direct sub-expressions of `e` (for a comprehension: its range and initial value, the
/// parts evaluated without its variables, then the rest).
fn children(e: &IdedExpr) -> Vec<&IdedExpr> {
    match &e.expr {
        Expr::Unspecified | Expr::Literal(_) | Expr::Ident(_) => Vec::new(),
        Expr::Select(s) => vec![&s.operand],
        Expr::Call(call) => call.target.iter().map(|t| &**t).chain(&call.args).collect(),
        Expr::List(list) => list.elements.iter().collect(),
        Expr::Map(map) => entry_children(&map.entries),
        Expr::Struct(s) => entry_children(&s.entries),
        Expr::Comprehension(c) => vec![
            &c.iter_range,
            &c.accu_init,
            &c.loop_cond,
            &c.loop_step,
            &c.result,
        ],
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::policy::cel_eval::Predicate;

    fn problems(source: &str) -> Vec<String> {
        let env = Arc::new(Env::stdlib());
        match Predicate::compile_all(&env, source) {
            Ok(_) => Vec::new(),
            Err(errors) => errors.iter().map(ToString::to_string).collect(),
        }
    }

    /// Predicates that evaluate: every one must load. The examples of the docs and the
    /// example registries are checked from their files too (`tests/it/lint_and_test_cli.rs`).
    const VALID: &[&str] = &[
        "int(new) < int(old)",
        "has(new.retention_days) && int(new.retention_days) < 7",
        "has(new.topics) && new.topics.exists(t, has(t.retention_days) && int(t.retention_days) < 7)",
        "new == null || (type(new) == list && new.all(x, new.exists_one(y, y == x)))",
        "size(string(new)) < size(string(old))",
        "new.operation == 'write'",
        "kind == 'delete' ? old.partitions > 1 : new == null",
        "old.exists(c, !(c in new))",
        "old == true && new == false",
        "new != old && !new.startsWith('team-')",
        "'retention-ok' in mr.labels && mr.iid == 7 && mr.author == 'ann'",
        "new",
        "new.missing > 1",
        "kind == 'modify' && file.endsWith('.yaml') && pointer.startsWith('/topics') && entry == 'a' && mr.iid == 7",
        "type(new) == int",
        "has(new.owner) && new.all(k, k != '') && google.protobuf.Duration != int",
        "size(new) > size(old) && 3 in new",
        "new == 18446744073709551615u",
        "new > 2.5",
        "mr.title.contains('WIP') || 'x' in mr.labels",
        "size(mr.labels) == 0 && has(mr.title) && !has(mr.nothing)",
        "mr.labels.exists(l, l.startsWith('team-'))",
        "kind in ['add', 'modify']",
        "[1, 2, 3].map(x, x * 2)[0] == 2",
        "{'a': 1}['a'] == 1",
        "new.filter(x, x > 1).size() > 0",
        "string(size(kind)) == '6'",
        "double(new) > 1.5 && uint(new) > 1u",
        "kind.size() == 6 && size(b'a') == 1",
        "int(new) / int(old) > 2 && int(new) % 2 == 0",
        "size(kind) > 0 ? new > 1 : old > 1",
        "(kind + '!').endsWith('!') && -int(new) < 0",
        "new.exists(x, x == kind) || new.map(x, size(x)).exists(n, n > 3)",
        "[kind, file].all(s, s != '')",
        "[true, false].exists(b, b)",
        "kind == 'add' || 1 / (int(new) - int(old)) > 0",
        "1 < 2.5 || new == null",
        "kind < 'modify' && 1u < 2u",
        "bool('true') && int('12') == 12",
        "timestamp('2020-01-01T00:00:00Z') < timestamp('2021-01-01T00:00:00Z') && duration('1h') > duration('1m')",
        "dyn(new) == 1",
    ];

    #[test]
    fn the_mr_fields_a_predicate_reads_are_named() {
        let read = |source: &str| {
            let predicate = Predicate::compile(&Arc::new(Env::stdlib()), source)
                .unwrap_or_else(|e| panic!("{source}: {e}"));
            predicate.mr_fields().into_iter().collect::<Vec<_>>()
        };
        assert_eq!(read("int(new) < int(old)"), Vec::<&str>::new());
        assert_eq!(
            read("mr.author != 'bot' && !('ok' in mr.labels)"),
            ["author", "labels"]
        );
        assert_eq!(read("has(mr.title) && kind == 'add'"), ["title"]);
        assert_eq!(
            read("[1].exists(x, mr.target_branch == 'main')"),
            ["target_branch"]
        );
        // `mr` read whole: any field may be read.
        assert_eq!(read("'title' in mr").len(), MR_FIELDS.len());
        assert_eq!(read("mr['author'] == 'bot'").len(), MR_FIELDS.len());
    }

    #[test]
    fn every_valid_predicate_loads() {
        for source in VALID {
            assert_eq!(problems(source), Vec::<String>::new(), "{source}");
        }
    }

    #[test]
    fn type_errors_on_literals_and_operators_are_load_problems() {
        let cases: &[(&str, &str)] = &[
            (
                "new < \"abc\" + 1",
                "`when` applies `+` to string and int, which CEL does not define: every evaluation would fail",
            ),
            (
                "int(new) < 'abc'",
                "`when` applies `<` to int and string, which CEL does not define: every evaluation would fail",
            ),
            (
                "kind - 'x' == new",
                "`when` applies `-` to string and string, which CEL does not define: every evaluation would fail",
            ),
            (
                "!kind",
                "`when` applies `!` to string, which CEL does not define: every evaluation would fail",
            ),
            (
                "kind.startsWith(1)",
                "`when` applies `.startsWith()` to string and int, which CEL does not define: every evaluation would fail",
            ),
            (
                "size(1) > 0 || new",
                "`when` applies `size()` to int, which CEL does not define: every evaluation would fail",
            ),
            (
                "size(new) && size(old)",
                "`when` applies `&&` to int and int, which CEL does not define: every evaluation would fail",
            ),
            (
                "size(new)",
                "`when` must yield a bool, but it yields int on every change",
            ),
            (
                "kind",
                "`when` must yield a bool, but it yields string on every change",
            ),
            (
                "size(kind) ? new : old",
                "the condition of `? :` in `when` is int, never a bool",
            ),
        ];
        for (source, expected) in cases {
            assert_eq!(problems(source), vec![(*expected).to_owned()], "{source}");
        }
    }

    #[test]
    fn unknown_functions_and_mr_fields_are_load_problems_with_a_suggestion() {
        assert_eq!(
            problems("sizee(new) > 1"),
            vec!["`when` calls unknown function `sizee` (did you mean `size`?)"]
        );
        assert_eq!(
            problems("new.startswith('team-')"),
            vec!["`when` calls unknown function `startswith` (did you mean `startsWith`?)"]
        );
        // Not a macro, so `x` is no comprehension variable either.
        assert_eq!(
            problems("new.exist(x, x > 1)"),
            vec![
                "`when` uses undeclared name `x` (variables: old, new, kind, file, pointer, entry, mr)",
                "`when` calls unknown function `exist` (did you mean `exists`?)"
            ]
        );
        assert_eq!(
            problems("frobnicate(new)"),
            vec!["`when` calls unknown function `frobnicate`"]
        );
        assert_eq!(
            problems("mr.titel == 'x'"),
            vec![
                "`when` reads `mr.titel`, which does not exist (mr has iid, title, source_branch, target_branch, author, labels) (did you mean `title`?)"
            ]
        );
    }

    #[test]
    fn parts_without_variables_that_always_fail_are_load_problems() {
        for (source, needle) in [
            ("1 / 0 == new", "Division by zero"),
            ("int('abc') < new", "int"),
            ("[1] + 1 == new", "add"),
            ("{'a': 1, 'a': 2}['a'] == new", "repeated key"),
        ] {
            let got = problems(source);
            assert_eq!(got.len(), 1, "{source}: {got:?}");
            assert!(
                got[0].starts_with("`when` holds a part without variables that always fails: ")
                    && got[0].contains(needle),
                "{source}: {got:?}"
            );
        }
    }

    #[test]
    fn every_problem_of_a_predicate_is_reported() {
        assert_eq!(
            problems("nwe < 'abc' + 1 || sizee(old) > 1 || mr.titel == ''"),
            vec![
                "`when` uses undeclared name `nwe` (variables: old, new, kind, file, pointer, entry, mr) (did you mean `new`?)",
                "`when` applies `+` to string and int, which CEL does not define: every evaluation would fail",
                "`when` calls unknown function `sizee` (did you mean `size`?)",
                "`when` reads `mr.titel`, which does not exist (mr has iid, title, source_branch, target_branch, author, labels) (did you mean `title`?)",
            ]
        );
    }

    #[test]
    fn every_suggested_function_exists() {
        let env = Arc::new(Env::stdlib());
        let checker = Checker {
            env: &env,
            scope: Vec::new(),
            errors: Vec::new(),
        };
        let macros = ["has", "all", "exists", "exists_one", "map", "filter"];
        for name in KNOWN_FUNCTIONS {
            if macros.contains(&name) {
                continue;
            }
            assert!(
                checker.function_exists(name, false, 1) || checker.function_exists(name, true, 1),
                "{name}"
            );
        }
        assert!(!checker.function_exists("sizee", false, 1));
        assert!(!checker.function_exists("sizee", true, 0));
    }
}
