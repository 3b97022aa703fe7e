use toolgate_runtime::tool;

/// Echoes.
#[tool]
fn echo<T: serde::Serialize>(value: T) -> T {
    value
}

fn main() {}
