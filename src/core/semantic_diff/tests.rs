//! Tests of the whole module.
