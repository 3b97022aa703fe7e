use toolgate_runtime::tool;

#[tool]
fn undocumented(path: String) -> String {
    path
}

fn main() {}
