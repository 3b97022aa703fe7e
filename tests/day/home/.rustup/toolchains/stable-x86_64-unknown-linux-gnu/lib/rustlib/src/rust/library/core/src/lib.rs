//! # The Rust Core Library
//!
//! The Rust Core Library is the dependency-free foundation of The Rust Standard Library.
#![stable(feature = "core", since = "1.6.0")]
#![no_core]
pub mod num;
pub mod option;
pub mod result;
