//! The structural checks of a `when` predicate at load time (see [`super::cel_eval`]): the
//! syntax tree's depth and comprehension nesting within their limits, and every name one of
//! the variables, a comprehension variable or a CEL type name.

use std::collections::BTreeSet;

use cel::Env;
use cel::common::ast::{EntryExpr, Expr, IdedExpr};

use super::cel_shared::{MAX_COMPREHENSION_NESTING, MAX_DEPTH, VARIABLES};
use super::cel_types::PredicateError;

/// Checks `expr` against the depth and nesting limits (the first one crossed is the error)
/// and returns every name it uses that is neither a variable, a comprehension variable nor a
/// CEL type name.
pub(super) fn undeclared_names(
    env: &Env,
    expr: &IdedExpr,
) -> Result<BTreeSet<String>, PredicateError> {
    let mut check = Check {
        env,
        bound: Vec::new(),
        undeclared: BTreeSet::new(),
    };
    check.walk(expr, 1, 0)?;
    Ok(check.undeclared)
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
