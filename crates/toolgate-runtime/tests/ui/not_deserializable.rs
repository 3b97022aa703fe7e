use toolgate_runtime::tool;

struct Opaque;

/// Takes something JSON cannot carry.
#[tool]
fn take(value: Opaque) -> String {
    let _ = value;
    String::new()
}

fn main() {}
