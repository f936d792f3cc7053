//! The files a run directory may serve: the figures an episode's cells drew (`figures/<name>`)
//! and what an episode left in its output folder (`tasks/<n>/output/...`). Nothing else: not
//! the journals (the API says what they hold), not a path that climbs out, not a link that
//! leads out. What an episode wrote is the model's work, so only raster images are served as
//! what they are; anything else is served as plain text (or for download) in a sandbox, so an
//! `.html` or `.svg` a sample wrote cannot run script in the viewer's origin.

use std::path::{Component, Path, PathBuf};

/// Files past this are not served (the page shows outputs, it is not a file browser).
pub const MAX_SERVED_BYTES: u64 = 64 << 20;

/// Why a file is not served.
#[derive(Debug, PartialEq, Eq)]
pub enum Refusal {
    /// Not a path the viewer serves, or not there.
    NotServed,
    /// Too large to serve.
    TooLarge(u64),
}

/// The file `relative` names under `root` (canonical), if it is one the viewer serves.
pub fn resolve(root: &Path, relative: &str) -> Result<PathBuf, Refusal> {
    let parts: Vec<&str> = Path::new(relative)
        .components()
        .map(|c| match c {
            Component::Normal(part) => part.to_str().ok_or(Refusal::NotServed),
            _ => Err(Refusal::NotServed),
        })
        .collect::<Result<_, _>>()?;
    let folder = match parts.as_slice() {
        ["figures", _] => root.join("figures"),
        ["tasks", n, "output", _, ..] if n.chars().all(|c| c.is_ascii_digit()) => {
            root.join("tasks").join(n).join("output")
        }
        _ => return Err(Refusal::NotServed),
    };
    let folder = std::fs::canonicalize(folder).map_err(|_| Refusal::NotServed)?;
    let file = std::fs::canonicalize(root.join(relative)).map_err(|_| Refusal::NotServed)?;
    if !file.starts_with(&folder) || !folder.starts_with(root) {
        return Err(Refusal::NotServed);
    }
    let meta = std::fs::metadata(&file).map_err(|_| Refusal::NotServed)?;
    if !meta.is_file() {
        return Err(Refusal::NotServed);
    }
    if meta.len() > MAX_SERVED_BYTES {
        return Err(Refusal::TooLarge(meta.len()));
    }
    Ok(file)
}

/// How a file is served: its content type, and whether it is shown (`inline`) or downloaded.
pub fn presentation(path: &Path) -> (&'static str, &'static str) {
    let extension = path
        .extension()
        .and_then(|e| e.to_str())
        .map(str::to_ascii_lowercase)
        .unwrap_or_default();
    match extension.as_str() {
        "png" => ("image/png", "inline"),
        "jpg" | "jpeg" => ("image/jpeg", "inline"),
        "gif" => ("image/gif", "inline"),
        "webp" => ("image/webp", "inline"),
        "txt" | "csv" | "tsv" | "json" | "jsonl" | "md" | "py" | "html" | "htm" | "svg" | "xml"
        | "yaml" | "yml" | "log" | "js" | "css" | "tex" | "ini" | "toml" => {
            ("text/plain; charset=utf-8", "inline")
        }
        _ => ("application/octet-stream", "attachment"),
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn only_figures_and_outputs_inside_the_run_are_served() {
        let outside = tempfile::tempdir().unwrap();
        std::fs::write(outside.path().join("secret.txt"), "secret").unwrap();
        let dir = tempfile::tempdir().unwrap();
        let root = std::fs::canonicalize(dir.path()).unwrap();
        std::fs::create_dir_all(root.join("figures")).unwrap();
        std::fs::create_dir_all(root.join("tasks/3/output/sub")).unwrap();
        std::fs::write(root.join("figures/3-1-1.png"), "png").unwrap();
        std::fs::write(root.join("tasks/3/output/sub/a.csv"), "a,b").unwrap();
        std::fs::write(root.join("results.jsonl"), "{}").unwrap();
        std::os::unix::fs::symlink(
            outside.path().join("secret.txt"),
            root.join("tasks/3/output/leak.txt"),
        )
        .unwrap();
        std::os::unix::fs::symlink(outside.path(), root.join("tasks/3/output/up")).unwrap();

        assert!(resolve(&root, "figures/3-1-1.png").is_ok());
        assert!(resolve(&root, "tasks/3/output/sub/a.csv").is_ok());
        for refused in [
            "results.jsonl",
            "manifest.json",
            "figures/../results.jsonl",
            "tasks/3/output/../../../results.jsonl",
            "tasks/3/output/leak.txt",
            "tasks/3/output/up/secret.txt",
            "/etc/passwd",
            "tasks/x/output/a",
            "tasks/3/output/sub",
            "figures/missing.png",
        ] {
            assert_eq!(
                resolve(&root, refused),
                Err(Refusal::NotServed),
                "{refused}"
            );
        }
    }

    #[test]
    fn only_raster_images_are_served_as_what_they_are() {
        assert_eq!(presentation(Path::new("a.PNG")).0, "image/png");
        assert_eq!(
            presentation(Path::new("page.html")).0,
            "text/plain; charset=utf-8"
        );
        assert_eq!(
            presentation(Path::new("x.svg")).0,
            "text/plain; charset=utf-8"
        );
        assert_eq!(presentation(Path::new("song.mp3")).1, "attachment");
    }
}
