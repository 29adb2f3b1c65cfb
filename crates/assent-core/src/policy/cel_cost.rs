//! The worst-case cost of a `when` predicate (see [`super::cel_eval`], "Guarding against
//! hostile expressions"): a conservative abstract evaluation of its syntax tree giving each
//! sub-expression an upper bound on the size of its value and on the work to compute it, from
//! upper bounds on the sizes of the variables. Deterministic: a function of the expression and
//! the sizes only.

use cel::Value as CelValue;
use cel::common::ast::{EntryExpr, Expr, IdedExpr, LiteralValue};
use cel::objects::Key;
use serde_json::Value;

use super::cel_shared::{Bindings, MAX_COST};

/// Whether a cost bound is at most [`MAX_COST`]; `NaN` (an overflowed bound) is not.
pub(super) fn within_budget(cost: f64) -> bool {
    cost.is_finite() && cost <= MAX_COST
}

/// Upper bounds on the size of each variable's value (see [`measure_json`]).
pub(super) struct Sizes {
    pub(super) old: f64,
    pub(super) new: f64,
    pub(super) kind: f64,
    pub(super) file: f64,
    pub(super) pointer: f64,
    pub(super) entry: f64,
    pub(super) mr: f64,
}

impl Sizes {
    pub(super) const ONE: Sizes = Sizes {
        old: 1.0,
        new: 1.0,
        kind: 1.0,
        file: 1.0,
        pointer: 1.0,
        entry: 1.0,
        mr: 1.0,
    };

    pub(super) fn of(b: &Bindings<'_>) -> Sizes {
        let text = |s: &str| 1.0 + s.len() as f64;
        Sizes {
            old: b.old.map_or(1.0, measure_json),
            new: b.new.map_or(1.0, measure_json),
            kind: text(b.kind),
            file: text(b.file),
            pointer: text(b.pointer),
            entry: b.entry.map_or(1.0, text),
            mr: measure_cel(b.mr),
        }
    }

    fn of_name(&self, name: &str) -> f64 {
        match name.strip_prefix('.').unwrap_or(name) {
            "old" => self.old,
            "new" => self.new,
            "kind" => self.kind,
            "file" => self.file,
            "pointer" => self.pointer,
            "entry" => self.entry,
            "mr" => self.mr,
            // A type name or an undeclared namespace: the largest variable is a safe bound.
            _ => [
                self.old,
                self.new,
                self.kind,
                self.file,
                self.pointer,
                self.entry,
                self.mr,
            ]
            .into_iter()
            .fold(1.0, f64::max),
        }
    }
}

/// The size of a JSON value: 1 per value, plus the bytes of every string and object key.
fn measure_json(value: &Value) -> f64 {
    match value {
        Value::String(s) => 1.0 + s.len() as f64,
        Value::Array(items) => 1.0 + items.iter().map(measure_json).sum::<f64>(),
        Value::Object(map) => {
            1.0 + map
                .iter()
                .map(|(k, v)| 1.0 + k.len() as f64 + measure_json(v))
                .sum::<f64>()
        }
        _ => 1.0,
    }
}

/// [`measure_json`] for a CEL value.
fn measure_cel(value: &CelValue) -> f64 {
    match value {
        CelValue::String(s) => 1.0 + s.len() as f64,
        CelValue::Bytes(b) => 1.0 + b.len() as f64,
        CelValue::List(items) => 1.0 + items.iter().map(measure_cel).sum::<f64>(),
        CelValue::Map(map) => {
            1.0 + map
                .map
                .iter()
                .map(|(k, v)| {
                    let key = match k {
                        Key::String(s) => s.len() as f64,
                        _ => 0.0,
                    };
                    1.0 + key + measure_cel(v)
                })
                .sum::<f64>()
        }
        _ => 1.0,
    }
}

/// Bounds for one sub-expression: the size of its value, the work to compute it, and whether
/// the value is certainly a scalar (bool, number, null: size exactly 1).
#[derive(Debug, Clone, Copy)]
struct Est {
    size: f64,
    cost: f64,
    scalar: bool,
}

impl Est {
    const SCALAR: Est = Est {
        size: 1.0,
        cost: 1.0,
        scalar: true,
    };
}

/// Functions whose result is a scalar whatever their arguments.
const SCALAR_RESULT: [&str; 29] = [
    "_==_",
    "_!=_",
    "_<_",
    "_<=_",
    "_>_",
    "_>=_",
    "_&&_",
    "_||_",
    "!_",
    "-_",
    "_-_",
    "_*_",
    "_/_",
    "_%_",
    "@in",
    "@not_strictly_false",
    "size",
    "has",
    "contains",
    "startsWith",
    "endsWith",
    "matches",
    "exists",
    "all",
    "int",
    "uint",
    "double",
    "bool",
    "max",
];

/// Functions that do constant work whatever the size of their arguments.
const CONSTANT_WORK: [&str; 6] = ["_&&_", "_||_", "!_", "_?_:_", "size", "@not_strictly_false"];

/// The abstract evaluation behind [`Predicate::cost_bound`]. Sound for what the `cel` parser
/// produces: comprehensions only come from its macros, whose accumulators grow by at most one
/// body result per step.
struct CostModel<'a> {
    sizes: &'a Sizes,
    /// Comprehension variables in scope with the bound of their size, innermost last.
    scope: Vec<(&'a str, Est)>,
}

impl<'a> CostModel<'a> {
    fn expr(&mut self, e: &'a IdedExpr) -> Est {
        match &e.expr {
            Expr::Unspecified => Est::SCALAR,
            Expr::Literal(literal) => match literal {
                LiteralValue::String(s) => Est {
                    size: 1.0 + s.inner().len() as f64,
                    cost: 1.0,
                    scalar: false,
                },
                LiteralValue::Bytes(b) => Est {
                    size: 1.0 + b.inner().len() as f64,
                    cost: 1.0,
                    scalar: false,
                },
                _ => Est::SCALAR,
            },
            Expr::Ident(name) => match self.scope.iter().rev().find(|(n, _)| n == name) {
                Some((_, est)) => Est { cost: 1.0, ..*est },
                None => Est {
                    size: self.sizes.of_name(name),
                    cost: 1.0,
                    scalar: false,
                },
            },
            Expr::Select(select) => {
                let operand = self.expr(&select.operand);
                Est {
                    size: operand.size,
                    cost: operand.cost + 1.0,
                    scalar: select.test,
                }
            }
            Expr::Call(call) => {
                let parts: Vec<Est> = call
                    .target
                    .iter()
                    .map(|t| &**t)
                    .chain(call.args.iter())
                    .map(|p| self.expr(p))
                    .collect();
                let in_size: f64 = parts.iter().map(|p| p.size).sum();
                let in_cost: f64 = parts.iter().map(|p| p.cost).sum();
                let name = call.func_name.as_str();
                let (size, scalar) = match name {
                    "_?_:_" if parts.len() == 3 => (
                        parts[1].size.max(parts[2].size),
                        parts[1].scalar && parts[2].scalar,
                    ),
                    "_+_" if parts.iter().all(|p| p.scalar) => (1.0, true),
                    "_[_]" if !parts.is_empty() => (parts[0].size, false),
                    _ if SCALAR_RESULT.contains(&name) => (1.0, true),
                    _ => (in_size, false),
                };
                // The macros' `@result + [x]` appends in place: the accumulator (a name no
                // expression can spell) has no other reference.
                let appends = name == "_+_"
                    && parts.len() == 2
                    && matches!(&call.args[0].expr, Expr::Ident(n) if n.starts_with('@'));
                let work = if CONSTANT_WORK.contains(&name) {
                    1.0
                } else if appends {
                    parts[1].size + 1.0
                } else {
                    in_size + 1.0
                };
                Est {
                    size,
                    cost: in_cost + work,
                    scalar,
                }
            }
            Expr::List(list) => self.aggregate(list.elements.iter().collect()),
            Expr::Map(map) => self.entries(&map.entries),
            Expr::Struct(s) => self.entries(&s.entries),
            Expr::Comprehension(c) => self.comprehension(c),
        }
    }

    fn entries(&mut self, entries: &'a [cel::common::ast::IdedEntryExpr]) -> Est {
        let mut parts = Vec::new();
        for entry in entries {
            match &entry.expr {
                EntryExpr::MapEntry(m) => {
                    parts.push(&m.key);
                    parts.push(&m.value);
                }
                EntryExpr::StructField(f) => parts.push(&f.value),
            }
        }
        self.aggregate(parts)
    }

    fn aggregate(&mut self, parts: Vec<&'a IdedExpr>) -> Est {
        let mut out = Est {
            size: 1.0,
            cost: 1.0,
            scalar: false,
        };
        for part in parts {
            let est = self.expr(part);
            out.size += est.size;
            out.cost += est.cost;
        }
        out
    }

    /// Loop condition and step with the iteration variable(s) of size `v` and the
    /// accumulator `accu`.
    fn body(
        &mut self,
        c: &'a cel::common::ast::ComprehensionExpr,
        v: f64,
        accu: Est,
    ) -> (Est, Est) {
        let before = self.scope.len();
        let var = Est {
            size: v,
            cost: 1.0,
            scalar: false,
        };
        self.scope.push((c.iter_var.as_str(), var));
        if let Some(v2) = &c.iter_var2 {
            self.scope.push((v2.as_str(), var));
        }
        self.scope.push((c.accu_var.as_str(), accu));
        let cond = self.expr(&c.loop_cond);
        let step = self.expr(&c.loop_step);
        self.scope.truncate(before);
        (cond, step)
    }

    /// A range of size `n` has at most `n` elements whose sizes add up to at most `n`. The
    /// body's cost and growth are polynomials with non-negative coefficients in the element
    /// size, hence convex, so their sum over the elements is at most `n` times their value
    /// for an empty element plus their value for one element holding everything.
    fn comprehension(&mut self, c: &'a cel::common::ast::ComprehensionExpr) -> Est {
        let range = self.expr(&c.iter_range);
        let init = self.expr(&c.accu_init);
        let n = range.size;
        let empty_accu = Est {
            size: 0.0,
            cost: 1.0,
            scalar: init.scalar,
        };
        // Assume a scalar accumulator stays scalar, and check that the step keeps it so.
        let (_, small) = self.body(c, 0.0, empty_accu);
        let (_, large) = self.body(c, n, empty_accu);
        let scalar = init.scalar && small.scalar && large.scalar;
        let accu = Est {
            size: if scalar {
                1.0
            } else {
                init.size + n * small.size + large.size
            },
            cost: 1.0,
            scalar,
        };
        let (cond_small, step_small) = self.body(c, 0.0, accu);
        let (cond_large, step_large) = self.body(c, n, accu);
        let loop_cost = n * (cond_small.cost + step_small.cost) + cond_large.cost + step_large.cost;
        self.scope.push((c.accu_var.as_str(), accu));
        let result = self.expr(&c.result);
        self.scope.pop();
        Est {
            size: result.size,
            cost: range.cost + init.cost + loop_cost + result.cost + 1.0,
            scalar: result.scalar,
        }
    }
}

/// The worst-case cost of evaluating `expr` alone with every variable of size 1 (see the
/// module docs): what [`cel_types`] may spend evaluating a part without variables.
pub(super) fn cost_of(expr: &IdedExpr) -> f64 {
    cost_bound(expr, &Sizes::ONE)
}

/// The worst-case cost of evaluating `expr` once with variables of the given sizes; `inf` or
/// `NaN` when it overflows.
pub(super) fn cost_bound(expr: &IdedExpr, sizes: &Sizes) -> f64 {
    CostModel {
        sizes,
        scope: Vec::new(),
    }
    .expr(expr)
    .cost
}
