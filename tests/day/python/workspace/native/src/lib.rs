use pyo3::exceptions::PyValueError;
use pyo3::prelude::*;

mod money;

/// Round a decimal string to `scale` places, half away from zero (like Python's ROUND_HALF_UP).
#[pyfunction]
fn round_minor(amount: &str, scale: u32) -> PyResult<String> {
    money::round_str(amount, scale).map_err(|e| PyValueError::new_err(e.to_string()))
}

/// Luhn checksum used for payment reference numbers.
#[pyfunction]
fn luhn_check(number: &str) -> bool {
    money::luhn(number)
}

#[pymodule]
fn invoicer_native(m: &Bound<'_, PyModule>) -> PyResult<()> {
    m.add_function(wrap_pyfunction!(round_minor, m)?)?;
    m.add_function(wrap_pyfunction!(luhn_check, m)?)?;
    Ok(())
}
