//! Sets `cfg(repository_docs)` when the crate is built inside its repository, where the
//! README and the documentation pages (`../docs/*.md`) sit beside it: their code blocks
//! are then compiled and run as this crate's doctests (`lib.rs`, `pages`). The published
//! package has neither, and its doctests are its own.

use std::path::PathBuf;

fn main() {
    println!("cargo::rustc-check-cfg=cfg(repository_docs)");
    println!("cargo::rerun-if-changed=build.rs");
    let dir = PathBuf::from(std::env::var_os("CARGO_MANIFEST_DIR").unwrap_or_default());
    let (docs, readme) = (dir.join("../docs"), dir.join("../README.md"));
    if docs.is_dir() && readme.is_file() {
        println!("cargo::rerun-if-changed=../docs");
        println!("cargo::rerun-if-changed=../README.md");
        println!("cargo::rustc-cfg=repository_docs");
    }
}
