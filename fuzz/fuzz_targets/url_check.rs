//! Any bytes as a URL: checking never panics, a checked host is lowercase with no trailing dot,
//! and a URL with a control character is never accepted.
#![no_main]

use libfuzzer_sys::fuzz_target;
use toolgate_policy::url::{AddressClass, check, in_class};

fuzz_target!(|data: &[u8]| {
    let Ok(text) = std::str::from_utf8(data) else {
        return;
    };
    if let Ok(url) = check(text) {
        assert!(!text.chars().any(char::is_control));
        assert_eq!(url.host, url.host.to_ascii_lowercase());
        assert!(!url.host.ends_with('.'));
        for class in AddressClass::ALL {
            let _ = in_class(&url, *class);
        }
    }
});
