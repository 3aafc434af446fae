//! Integration tests (filled in next).
