//! The unified result: seed JSON shapes, the null rule and the processor helpers.
#![cfg(feature = "runtime")]

use serde_json::{Value, json};
use tool_dispatch::{Error, IntoToolResult, ToolExecutionResult};

#[test]
fn query_success_is_the_seeds_json() {
    let result =
        ToolExecutionResult::query_success(json!([{"name": "tokio"}]), "成功查询GitHub趋势仓库");
    assert_eq!(
        serde_json::to_value(&result).unwrap(),
        json!({"success": true, "operationType": "query", "data": [{"name": "tokio"}], "message": "成功查询GitHub趋势仓库"})
    );
    assert!(result.is_success());
    assert!(!result.is_empty());
    assert_eq!(result.data(), Some(&json!([{"name": "tokio"}])));
    assert_eq!(result.message(), "成功查询GitHub趋势仓库");
}

#[test]
fn empty_and_failure_keep_data_null_and_field_order() {
    assert_eq!(
        ToolExecutionResult::empty("query", "未找到符合条件的数据").to_string(),
        r#"{"success":false,"operationType":"query","data":null,"message":"未找到符合条件的数据"}"#
    );
    assert_eq!(
        ToolExecutionResult::failure("operation", "删除失败，权限不足").to_string(),
        r#"{"success":false,"operationType":"operation","data":null,"message":"删除失败，权限不足"}"#
    );
}

#[test]
fn metadata_is_written_only_when_present() {
    let mut paging = serde_json::Map::new();
    paging.insert("total".into(), json!(42));
    let result = ToolExecutionResult::save_success(json!({"blogId": 1}), "博客文章保存成功")
        .with_metadata(paging);
    assert_eq!(
        result.to_string(),
        r#"{"success":true,"operationType":"save","data":{"blogId":1},"message":"博客文章保存成功","metadata":{"total":42}}"#
    );
    assert!(
        !ToolExecutionResult::save_success(json!(1), "m")
            .to_string()
            .contains("metadata")
    );
}

#[test]
fn nothing_returned_becomes_the_null_result() {
    let expected = r#"{"success":false,"operationType":"unknown","message":"tool returned null"}"#;
    assert_eq!(().into_tool_result().to_string(), expected);
    assert_eq!(
        None::<ToolExecutionResult>.into_tool_result().to_string(),
        expected
    );
    assert_eq!(Value::Null.into_tool_result().to_string(), expected);
    assert_eq!("null".into_tool_result().to_string(), expected);
}

#[test]
fn json_text_from_a_tool_is_parsed_and_garbage_is_a_failure() {
    let text = r#"{"success":true,"operationType":"query","data":{"total":2},"message":"成功执行数据库查询"}"#;
    assert_eq!(text.into_tool_result().to_string(), text);
    let not_json = "rows: 2".into_tool_result();
    assert!(!not_json.success);
    assert!(
        not_json.message.starts_with("invalid tool result: "),
        "{}",
        not_json.message
    );
    let no_flag = json!({"data": 1}).into_tool_result();
    assert!(!no_flag.success);
    assert!(
        no_flag.message.contains("missing field `success`"),
        "{}",
        no_flag.message
    );
}

#[test]
fn an_error_becomes_a_failure_with_its_message() {
    let failed: Result<ToolExecutionResult, std::io::Error> =
        Err(std::io::Error::other("disk full"));
    assert_eq!(
        failed.into_tool_result().to_string(),
        r#"{"success":false,"operationType":"unknown","data":null,"message":"disk full"}"#
    );
}

#[test]
fn processor_helpers_read_parsed_results() {
    let parsed: ToolExecutionResult =
        r#"{"success":true,"data":[],"message":"ok"}"#.parse().unwrap();
    assert_eq!(parsed.operation_type, "unknown");
    assert!(parsed.is_success() && parsed.is_empty());
    assert!(matches!(
        ToolExecutionResult::parse("[1]"),
        Err(Error::InvalidResult(_))
    ));
    assert!(ToolExecutionResult::empty("query", "none").is_empty());
    assert!(!ToolExecutionResult::query_success(json!(0), "zero").is_empty());
    assert_eq!(ToolExecutionResult::failure("save", "no").data(), None);
}

#[test]
fn ai_friendly_message_states_the_verdict_and_the_data() {
    assert_eq!(
        ToolExecutionResult::query_success(json!(["a", "b"]), "found 2 rows")
            .to_ai_friendly_message(),
        r#"Success (query): found 2 rows. Data: ["a","b"]"#
    );
    assert_eq!(
        ToolExecutionResult::query_success(json!("sunny"), "read").to_ai_friendly_message(),
        "Success (query): read. Data: sunny"
    );
    assert_eq!(
        ToolExecutionResult::failure("save", "博客标题不能为空").to_ai_friendly_message(),
        "Failure (save): 博客标题不能为空"
    );
}
