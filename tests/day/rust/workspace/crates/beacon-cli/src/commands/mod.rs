pub mod check;
pub mod serve;
pub mod validate;
