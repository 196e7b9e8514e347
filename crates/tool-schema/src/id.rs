//! Tool ids: `namespace:name` or a bare name.

use std::fmt;
use std::path::{Path, PathBuf};
use std::str::FromStr;

use serde::{Deserialize, Deserializer, Serialize, Serializer};

use crate::Error;

/// The namespace of tools implemented by a workflow file (`workflow:summarize_text`).
pub const WORKFLOW_NAMESPACE: &str = "workflow";

/// A tool id: `namespace:name` (`workflow:summarize_text`, `kb:Query`,
/// `my-plugin:magic_node_tool`) or a bare name (`FileOperator.ApplyEdit`).
///
/// The namespace is everything before the first `:`. A namespace is made of ASCII letters,
/// digits, `_`, `-` and `.`; a name is any non-empty text without whitespace or control
/// characters. Names in the `workflow` namespace are file stems in a workflow directory, so
/// they are further restricted: no `..`, `/`, `\` or `:`, which means a workflow id can
/// never name a file outside that directory (see [`ToolId::workflow_file`]).
///
/// Ids compare, hash and order as their text. Serde reads and writes the text form.
#[derive(Clone, PartialEq, Eq, Hash, PartialOrd, Ord)]
pub struct ToolId {
    text: String,
    /// Byte offset of the first `:`, if any.
    colon: Option<usize>,
}

impl ToolId {
    /// Parses `text` as written, without trimming.
    ///
    /// # Errors
    /// [`Error::InvalidToolId`] for an empty id, an empty namespace or name, whitespace or
    /// control characters, a namespace outside `[A-Za-z0-9_.-]`, or a `workflow:` name that
    /// could leave the workflow directory.
    pub fn parse(text: &str) -> Result<ToolId, Error> {
        let colon = text.find(':');
        let invalid = |reason: &'static str| Error::InvalidToolId {
            id: text.to_owned(),
            reason,
        };
        if text.is_empty() {
            return Err(invalid("the id is empty"));
        }
        if text.chars().any(|c| c.is_whitespace() || c.is_control()) {
            return Err(invalid(
                "an id cannot contain whitespace or control characters",
            ));
        }
        let name = match colon {
            Some(at) => {
                let namespace = &text[..at];
                if namespace.is_empty() {
                    return Err(invalid("the namespace before ':' is empty"));
                }
                if !namespace
                    .bytes()
                    .all(|b| b.is_ascii_alphanumeric() || matches!(b, b'_' | b'-' | b'.'))
                {
                    return Err(invalid(
                        "a namespace may only contain ASCII letters, digits, '_', '-' and '.'",
                    ));
                }
                let name = &text[at + 1..];
                if namespace == WORKFLOW_NAMESPACE {
                    check_workflow_name(name).map_err(invalid)?;
                }
                name
            }
            None => text,
        };
        if name.is_empty() {
            return Err(invalid("the name after ':' is empty"));
        }
        Ok(ToolId {
            text: text.to_owned(),
            colon,
        })
    }

    /// Builds `namespace:name`, with the same checks as [`ToolId::parse`].
    ///
    /// # Errors
    /// As [`ToolId::parse`].
    pub fn new(namespace: &str, name: &str) -> Result<ToolId, Error> {
        ToolId::parse(&format!("{namespace}:{name}"))
    }

    /// The `workflow:<workflow_id>` id of a workflow file stem.
    ///
    /// # Errors
    /// As [`ToolId::parse`]: the stem must not contain `..`, `/`, `\` or `:`.
    pub fn workflow(workflow_id: &str) -> Result<ToolId, Error> {
        ToolId::new(WORKFLOW_NAMESPACE, workflow_id)
    }

    /// The id as written.
    pub fn as_str(&self) -> &str {
        &self.text
    }

    /// The part before the first `:`, or `None` for a bare name.
    pub fn namespace(&self) -> Option<&str> {
        self.colon.map(|at| &self.text[..at])
    }

    /// The part after the first `:`, or the whole id for a bare name.
    pub fn name(&self) -> &str {
        match self.colon {
            Some(at) => &self.text[at + 1..],
            None => &self.text,
        }
    }

    /// The workflow id (file stem) when the namespace is `workflow`.
    pub fn workflow_id(&self) -> Option<&str> {
        (self.namespace() == Some(WORKFLOW_NAMESPACE)).then(|| self.name())
    }

    /// `dir/<workflow_id>.json` for a `workflow:` id, `None` for other namespaces.
    ///
    /// The result is always a direct child of `dir`: parsing rejected every name that could
    /// climb out of it.
    pub fn workflow_file(&self, dir: &Path) -> Option<PathBuf> {
        self.workflow_id()
            .map(|stem| dir.join(format!("{stem}.json")))
    }
}

/// Checks a workflow reference. A `workflow:` id names a file stem (no sub-directories);
/// a plugin's `implementation.workflowId` may name a relative path inside the plugin
/// (`workflows/my_complex_workflow.json`), one `/`-separated segment at a time.
pub(crate) fn check_workflow_reference(
    reference: &str,
    allow_subdirectories: bool,
) -> Result<(), &'static str> {
    if reference.is_empty() {
        return Err("a workflow id cannot be empty");
    }
    if reference.starts_with('/') {
        return Err("a workflow id cannot be an absolute path");
    }
    if allow_subdirectories {
        reference.split('/').try_for_each(check_workflow_name)
    } else {
        check_workflow_name(reference)
    }
}

fn check_workflow_name(name: &str) -> Result<(), &'static str> {
    if name.is_empty() {
        return Err("a workflow id cannot be empty or contain an empty path segment");
    }
    if name.contains("..") {
        return Err("a workflow id cannot contain '..'");
    }
    if name.contains('/') {
        return Err("a workflow id cannot contain '/'");
    }
    if name.contains('\\') {
        return Err("a workflow id cannot contain '\\'");
    }
    if name.contains(':') {
        return Err("a workflow id cannot contain ':' (a drive or a second namespace)");
    }
    if name == "." {
        return Err("a workflow id cannot be '.'");
    }
    if name.chars().any(char::is_control) {
        return Err("a workflow id cannot contain control characters");
    }
    Ok(())
}

impl fmt::Display for ToolId {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str(&self.text)
    }
}

impl fmt::Debug for ToolId {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        write!(f, "ToolId({:?})", self.text)
    }
}

impl FromStr for ToolId {
    type Err = Error;

    fn from_str(text: &str) -> Result<ToolId, Error> {
        ToolId::parse(text)
    }
}

impl TryFrom<&str> for ToolId {
    type Error = Error;

    fn try_from(text: &str) -> Result<ToolId, Error> {
        ToolId::parse(text)
    }
}

impl AsRef<str> for ToolId {
    fn as_ref(&self) -> &str {
        &self.text
    }
}

impl Serialize for ToolId {
    fn serialize<S: Serializer>(&self, serializer: S) -> Result<S::Ok, S::Error> {
        serializer.serialize_str(&self.text)
    }
}

impl<'de> Deserialize<'de> for ToolId {
    fn deserialize<D: Deserializer<'de>>(deserializer: D) -> Result<ToolId, D::Error> {
        let text = String::deserialize(deserializer)?;
        ToolId::parse(&text).map_err(serde::de::Error::custom)
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn splits_at_the_first_colon() {
        let id = ToolId::parse("my-plugin:a:b").unwrap();
        assert_eq!(id.namespace(), Some("my-plugin"));
        assert_eq!(id.name(), "a:b");
        let bare = ToolId::parse("FileOperator.ApplyEdit").unwrap();
        assert_eq!(bare.namespace(), None);
        assert_eq!(bare.name(), "FileOperator.ApplyEdit");
    }

    #[test]
    fn workflow_references_may_have_subdirectories_only_when_allowed() {
        assert!(check_workflow_reference("workflows/x.json", true).is_ok());
        assert!(check_workflow_reference("workflows/x.json", false).is_err());
        assert!(check_workflow_reference("workflows//x.json", true).is_err());
        assert!(check_workflow_reference("workflows/../x.json", true).is_err());
        assert!(check_workflow_reference("/etc/passwd", true).is_err());
    }
}
