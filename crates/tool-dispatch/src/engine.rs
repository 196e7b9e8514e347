//! Running workflows: the [`ExecutionEngine`] trait the dispatcher hands workflow and node
//! tools to, the [`WorkflowExecutionPayload`] it receives, and [`ReferenceEngine`], a small
//! engine that really runs workflow DAGs with node functions registered by node type.
//!
//! A payload holds nodes and edges in the execution shape of the workflow seeds
//! (`fullType`, `sourceNodeId`/`sourceHandle` → `targetNodeId`/`targetHandle`), the values
//! of the workflow's interface inputs, and `outputInterfaceMappings` naming the node slot
//! each interface output is read from. Two node types are built in: [`GROUP_INPUT_NODE`]
//! outputs the interface input values, [`GROUP_OUTPUT_NODE`] outputs what flows into it.

use std::collections::{BTreeMap, HashMap, HashSet, VecDeque};
use std::fmt;
use std::future::Future;
use std::sync::Arc;

use futures_util::future::BoxFuture;
use serde::{Deserialize, Serialize};
use serde_json::{Map, Value};

use crate::{BoxError, Error};

/// Node type whose outputs are the payload's interface input values, one slot per key.
pub const GROUP_INPUT_NODE: &str = "core:GroupInput";
/// Node type whose outputs are its own inputs; interface outputs are read from it.
pub const GROUP_OUTPUT_NODE: &str = "core:GroupOutput";

fn is_group_input(node_type: &str) -> bool {
    node_type == GROUP_INPUT_NODE || node_type == "GroupInput"
}

fn is_group_output(node_type: &str) -> bool {
    node_type == GROUP_OUTPUT_NODE || node_type == "GroupOutput"
}

/// Interface output values by key, as an engine returns them.
pub type InterfaceOutputs = Map<String, Value>;

/// Runs a workflow payload and returns its interface outputs.
///
/// The returned future is `'static` so the dispatcher can run it on its own task, time it
/// out and abort it. An engine must not panic on a bad payload; it returns an error.
pub trait ExecutionEngine: Send + Sync {
    /// Runs `payload` to completion.
    fn run(
        &self,
        payload: WorkflowExecutionPayload,
    ) -> BoxFuture<'static, Result<InterfaceOutputs, Error>>;
}

/// One node to execute.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
#[serde(rename_all = "camelCase")]
pub struct ExecutionNode {
    /// Unique within the payload.
    pub id: String,
    /// The node type (`namespace:type`) a node function is registered under.
    pub full_type: String,
    /// Static input values; a connected edge overrides the value of its slot.
    #[serde(default, skip_serializing_if = "Map::is_empty")]
    pub inputs: Map<String, Value>,
    /// The node's configuration values.
    #[serde(default, skip_serializing_if = "Map::is_empty")]
    pub config_values: Map<String, Value>,
}

/// One connection from an output slot to an input slot.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
#[serde(rename_all = "camelCase")]
pub struct ExecutionEdge {
    /// The node whose output is read.
    pub source_node_id: String,
    /// The output slot read.
    pub source_handle: String,
    /// The node whose input is fed.
    pub target_node_id: String,
    /// The input slot fed.
    pub target_handle: String,
}

/// Where an interface output is read from.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
#[serde(rename_all = "camelCase")]
pub struct OutputMapping {
    /// The node whose output slot is read.
    pub source_node_id: String,
    /// The output slot read.
    pub source_slot_key: String,
}

/// A workflow to run: the seeds' `WorkflowExecutionPayload`.
#[derive(Debug, Clone, PartialEq, Default, Serialize, Deserialize)]
#[serde(rename_all = "camelCase")]
pub struct WorkflowExecutionPayload {
    /// The workflow's id, for error messages; `None` for a payload built in memory.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub workflow_id: Option<String>,
    /// The nodes, in any order.
    pub nodes: Vec<ExecutionNode>,
    /// The connections; together with `nodes` they must form a DAG.
    #[serde(default)]
    pub edges: Vec<ExecutionEdge>,
    /// Values of the interface inputs by key (the tool call's validated arguments).
    #[serde(default)]
    pub inputs: Map<String, Value>,
    /// Interface output key → the node slot it is read from.
    #[serde(default)]
    pub output_interface_mappings: BTreeMap<String, OutputMapping>,
    /// A node whose every output slot is also an interface output of the same name (after
    /// `output_interface_mappings`, which win on a name both give): single-node wrapping of
    /// a node whose outputs no schema names, so nothing the node returns is lost. An engine
    /// must honour it as [`ReferenceEngine`] does.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub pass_through_outputs: Option<String>,
}

/// The stored workflow JSON, reduced to what execution needs.
#[derive(Deserialize)]
#[serde(rename_all = "camelCase")]
struct StoredWorkflow {
    #[serde(default)]
    nodes: Vec<StoredNode>,
    #[serde(default)]
    edges: Vec<StoredEdge>,
    #[serde(default, alias = "outputInterface")]
    interface_outputs: Option<Map<String, Value>>,
}

#[derive(Deserialize)]
#[serde(rename_all = "camelCase")]
struct StoredNode {
    id: String,
    #[serde(rename = "type")]
    node_type: String,
    #[serde(default)]
    input_values: Option<Map<String, Value>>,
    #[serde(default)]
    config_values: Option<Map<String, Value>>,
}

#[derive(Deserialize)]
#[serde(rename_all = "camelCase")]
struct StoredEdge {
    source: String,
    target: String,
    #[serde(default)]
    source_handle: Option<String>,
    #[serde(default)]
    target_handle: Option<String>,
}

impl WorkflowExecutionPayload {
    /// Builds the payload of a stored workflow (`nodes` with `id`, `type`, `inputValues`,
    /// `configValues`; `edges` with `source`, `sourceHandle`, `target`, `targetHandle`),
    /// with no input values yet. Interface outputs are read from the group output node:
    /// the keys of `interfaceOutputs` when declared, else the slots wired into it.
    ///
    /// # Errors
    /// [`Error::InvalidWorkflow`] when the JSON lacks that shape, when an edge has no
    /// handle, or when outputs are declared but there is no single group output node.
    pub fn from_workflow_json(workflow_id: &str, workflow: &Value) -> Result<Self, Error> {
        let invalid = |reason: String| Error::InvalidWorkflow {
            workflow: workflow_id.to_owned(),
            reason,
        };
        let stored = StoredWorkflow::deserialize(workflow).map_err(|e| invalid(e.to_string()))?;
        let mut edges = Vec::with_capacity(stored.edges.len());
        for edge in stored.edges {
            let (Some(source_handle), Some(target_handle)) =
                (edge.source_handle, edge.target_handle)
            else {
                return Err(invalid(format!(
                    "edge {} -> {} lacks a source or target handle",
                    edge.source, edge.target
                )));
            };
            edges.push(ExecutionEdge {
                source_node_id: edge.source,
                source_handle,
                target_node_id: edge.target,
                target_handle,
            });
        }
        let group_outputs: Vec<&StoredNode> = stored
            .nodes
            .iter()
            .filter(|n| is_group_output(&n.node_type))
            .collect();
        let output_keys: Vec<String> = match (&stored.interface_outputs, group_outputs.first()) {
            (Some(declared), _) => declared.keys().cloned().collect(),
            (None, Some(out)) => edges
                .iter()
                .filter(|e| e.target_node_id == out.id)
                .map(|e| e.target_handle.clone())
                .collect(),
            (None, None) => Vec::new(),
        };
        let mut output_interface_mappings = BTreeMap::new();
        if !output_keys.is_empty() {
            let [out] = group_outputs.as_slice() else {
                return Err(invalid(format!(
                    "interface outputs need exactly one {GROUP_OUTPUT_NODE} node, found {}",
                    group_outputs.len()
                )));
            };
            for key in output_keys {
                let mapping = OutputMapping {
                    source_node_id: out.id.clone(),
                    source_slot_key: key.clone(),
                };
                output_interface_mappings.insert(key, mapping);
            }
        }
        let nodes = stored
            .nodes
            .into_iter()
            .map(|n| ExecutionNode {
                id: n.id,
                full_type: n.node_type,
                inputs: n.input_values.unwrap_or_default(),
                config_values: n.config_values.unwrap_or_default(),
            })
            .collect();
        Ok(Self {
            workflow_id: Some(workflow_id.to_owned()),
            nodes,
            edges,
            inputs: Map::new(),
            output_interface_mappings,
            pass_through_outputs: None,
        })
    }

    /// Single-node wrapping: one node of `node_type` whose inputs are
    /// `inputs`, no edges, and each of `output_slots` mapped to the interface output of the
    /// same name. With no `output_slots` (the tool declares no output schema) every slot
    /// the node returns is an interface output ([`pass_through_outputs`](Self::pass_through_outputs)),
    /// as the seed maps "all output slots" of the node.
    pub fn single_node(
        node_type: &str,
        inputs: Map<String, Value>,
        output_slots: impl IntoIterator<Item = String>,
    ) -> Self {
        const NODE_ID: &str = "node";
        let output_interface_mappings: BTreeMap<String, OutputMapping> = output_slots
            .into_iter()
            .map(|slot| {
                let mapping = OutputMapping {
                    source_node_id: NODE_ID.to_owned(),
                    source_slot_key: slot.clone(),
                };
                (slot, mapping)
            })
            .collect();
        Self {
            workflow_id: None,
            nodes: vec![ExecutionNode {
                id: NODE_ID.to_owned(),
                full_type: node_type.to_owned(),
                inputs,
                config_values: Map::new(),
            }],
            edges: Vec::new(),
            inputs: Map::new(),
            pass_through_outputs: output_interface_mappings
                .is_empty()
                .then(|| NODE_ID.to_owned()),
            output_interface_mappings,
        }
    }

    /// Sets the interface input values.
    #[must_use]
    pub fn with_inputs(mut self, inputs: Map<String, Value>) -> Self {
        self.inputs = inputs;
        self
    }

    fn name(&self) -> &str {
        self.workflow_id.as_deref().unwrap_or("<inline>")
    }

    /// Node indices in a topological order, stable with respect to the payload's order.
    ///
    /// # Errors
    /// [`Error::InvalidWorkflow`] for duplicate node ids or dangling edges and mappings,
    /// [`Error::WorkflowCycle`] naming the nodes left on a cycle.
    pub fn topological_order(&self) -> Result<Vec<usize>, Error> {
        let invalid = |reason: String| Error::InvalidWorkflow {
            workflow: self.name().to_owned(),
            reason,
        };
        let mut index = HashMap::with_capacity(self.nodes.len());
        for (i, node) in self.nodes.iter().enumerate() {
            if index.insert(node.id.as_str(), i).is_some() {
                return Err(invalid(format!("node id '{}' is used twice", node.id)));
            }
        }
        let lookup = |id: &str| {
            index
                .get(id)
                .copied()
                .ok_or_else(|| invalid(format!("unknown node '{id}'")))
        };
        let mut successors = vec![Vec::new(); self.nodes.len()];
        let mut in_degree = vec![0usize; self.nodes.len()];
        for edge in &self.edges {
            let (from, to) = (lookup(&edge.source_node_id)?, lookup(&edge.target_node_id)?);
            successors[from].push(to);
            in_degree[to] += 1;
        }
        for mapping in self.output_interface_mappings.values() {
            lookup(&mapping.source_node_id)?;
        }
        if let Some(node) = &self.pass_through_outputs {
            lookup(node)?;
        }
        let mut ready: VecDeque<usize> = (0..self.nodes.len())
            .filter(|&i| in_degree[i] == 0)
            .collect();
        let mut order = Vec::with_capacity(self.nodes.len());
        while let Some(i) = ready.pop_front() {
            order.push(i);
            for &next in &successors[i] {
                in_degree[next] -= 1;
                if in_degree[next] == 0 {
                    ready.push_back(next);
                }
            }
        }
        if order.len() < self.nodes.len() {
            let placed: HashSet<usize> = order.into_iter().collect();
            let nodes = (0..self.nodes.len())
                .filter(|i| !placed.contains(i))
                .map(|i| self.nodes[i].id.clone())
                .collect();
            return Err(Error::WorkflowCycle {
                workflow: self.name().to_owned(),
                nodes,
            });
        }
        Ok(order)
    }
}

/// What a node function receives.
#[derive(Debug, Clone, PartialEq)]
pub struct NodeInvocation {
    /// The node's id in the payload.
    pub node_id: String,
    /// Input values by slot: the node's static inputs overlaid by connected edges. A slot
    /// fed by several edges holds an array of their values in edge order.
    pub inputs: Map<String, Value>,
    /// The node's configuration values.
    pub config: Map<String, Value>,
}

/// The future a node function returns: output values by slot, or the node's error.
pub type NodeFuture = BoxFuture<'static, Result<Map<String, Value>, BoxError>>;

type NodeFn = Arc<dyn Fn(NodeInvocation) -> NodeFuture + Send + Sync>;

/// A small, real workflow engine: checks the graph, orders it topologically and runs one
/// node at a time, feeding each node's output slots to the inputs wired to them.
///
/// Unknown node types are reported before any node runs; a failing node stops the run.
///
/// ```
/// use tool_dispatch::engine::{ExecutionEngine, ReferenceEngine, WorkflowExecutionPayload};
/// use serde_json::{json, Map, Value};
///
/// let engine = ReferenceEngine::new().with_node("math:Add", |call| async move {
///     let sum = call.inputs["a"].as_i64().unwrap_or(0) + call.inputs["b"].as_i64().unwrap_or(0);
///     let mut out = Map::new();
///     out.insert("sum".into(), json!(sum));
///     Ok(out)
/// });
/// let Value::Object(args) = json!({"a": 2, "b": 3}) else { unreachable!() };
/// let payload = WorkflowExecutionPayload::single_node("math:Add", args, ["sum".to_owned()]);
/// let rt = tokio::runtime::Builder::new_current_thread().build().unwrap();
/// let outputs = rt.block_on(engine.run(payload)).unwrap();
/// assert_eq!(outputs["sum"], json!(5));
/// ```
#[derive(Clone, Default)]
pub struct ReferenceEngine {
    nodes: HashMap<String, NodeFn>,
}

impl fmt::Debug for ReferenceEngine {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        let mut types: Vec<&str> = self.node_types().collect();
        types.sort_unstable();
        f.debug_struct("ReferenceEngine")
            .field("node_types", &types)
            .finish()
    }
}

impl ReferenceEngine {
    /// An engine that knows only the built-in group input and output nodes.
    pub fn new() -> Self {
        Self::default()
    }

    /// Registers the function that runs nodes of `node_type`, replacing any earlier one.
    pub fn register_node<F, Fut>(&mut self, node_type: impl Into<String>, node: F)
    where
        F: Fn(NodeInvocation) -> Fut + Send + Sync + 'static,
        Fut: Future<Output = Result<Map<String, Value>, BoxError>> + Send + 'static,
    {
        let node: NodeFn = Arc::new(move |call| Box::pin(node(call)));
        self.nodes.insert(node_type.into(), node);
    }

    /// Builder form of [`register_node`](Self::register_node).
    #[must_use]
    pub fn with_node<F, Fut>(mut self, node_type: impl Into<String>, node: F) -> Self
    where
        F: Fn(NodeInvocation) -> Fut + Send + Sync + 'static,
        Fut: Future<Output = Result<Map<String, Value>, BoxError>> + Send + 'static,
    {
        self.register_node(node_type, node);
        self
    }

    /// The registered node types (built-ins not included), in no particular order.
    pub fn node_types(&self) -> impl Iterator<Item = &str> {
        self.nodes.keys().map(String::as_str)
    }
}

/// How one node of a checked plan runs.
enum Step {
    GroupInput,
    GroupOutput,
    Function(NodeFn),
}

impl ExecutionEngine for ReferenceEngine {
    fn run(
        &self,
        payload: WorkflowExecutionPayload,
    ) -> BoxFuture<'static, Result<InterfaceOutputs, Error>> {
        let plan = self.plan(&payload);
        Box::pin(async move {
            let plan = plan?;
            execute(payload, plan).await
        })
    }
}

impl ReferenceEngine {
    /// Checks the whole graph before anything runs: topological order and a function for
    /// every node type.
    fn plan(&self, payload: &WorkflowExecutionPayload) -> Result<Vec<(usize, Step)>, Error> {
        let order = payload.topological_order()?;
        order
            .into_iter()
            .map(|i| {
                let node = &payload.nodes[i];
                let step = if is_group_input(&node.full_type) {
                    Step::GroupInput
                } else if is_group_output(&node.full_type) {
                    Step::GroupOutput
                } else {
                    let f =
                        self.nodes
                            .get(&node.full_type)
                            .ok_or_else(|| Error::UnknownNodeType {
                                workflow: payload.name().to_owned(),
                                node_id: node.id.clone(),
                                node_type: node.full_type.clone(),
                            })?;
                    Step::Function(Arc::clone(f))
                };
                Ok((i, step))
            })
            .collect()
    }
}

async fn execute(
    payload: WorkflowExecutionPayload,
    plan: Vec<(usize, Step)>,
) -> Result<InterfaceOutputs, Error> {
    let mut incoming: HashMap<&str, Vec<&ExecutionEdge>> = HashMap::new();
    for edge in &payload.edges {
        incoming
            .entry(edge.target_node_id.as_str())
            .or_default()
            .push(edge);
    }
    let mut produced: HashMap<&str, Map<String, Value>> = HashMap::with_capacity(plan.len());
    for (i, step) in plan {
        let node = &payload.nodes[i];
        let mut inputs = node.inputs.clone();
        let mut fed: HashMap<&str, Vec<Value>> = HashMap::new();
        for edge in incoming.get(node.id.as_str()).into_iter().flatten() {
            // A slot the upstream node did not produce leaves the input unset, so the node's
            // own default (or static value) applies, as for an optional interface input.
            if let Some(v) = produced
                .get(edge.source_node_id.as_str())
                .and_then(|o| o.get(&edge.source_handle))
            {
                fed.entry(edge.target_handle.as_str())
                    .or_default()
                    .push(v.clone());
            }
        }
        for (slot, mut values) in fed {
            let value = if values.len() == 1 {
                values.pop().unwrap_or_default()
            } else {
                Value::Array(values)
            };
            inputs.insert(slot.to_owned(), value);
        }
        let outputs = match step {
            Step::GroupInput => payload.inputs.clone(),
            Step::GroupOutput => inputs,
            Step::Function(f) => {
                let call = NodeInvocation {
                    node_id: node.id.clone(),
                    inputs,
                    config: node.config_values.clone(),
                };
                f(call).await.map_err(|e| Error::NodeFailed {
                    workflow: payload.name().to_owned(),
                    node_id: node.id.clone(),
                    node_type: node.full_type.clone(),
                    message: e.to_string(),
                })?
            }
        };
        produced.insert(node.id.as_str(), outputs);
    }
    let mut outputs: InterfaceOutputs = payload
        .output_interface_mappings
        .iter()
        .map(|(key, m)| {
            let value = produced
                .get(m.source_node_id.as_str())
                .and_then(|o| o.get(&m.source_slot_key))
                .cloned()
                .unwrap_or(Value::Null);
            (key.clone(), value)
        })
        .collect();
    if let Some(slots) = payload
        .pass_through_outputs
        .as_deref()
        .and_then(|node| produced.remove(node))
    {
        for (slot, value) in slots {
            outputs.entry(slot).or_insert(value);
        }
    }
    Ok(outputs)
}

/// The value a workflow tool returns: the only output's value itself when there is one
/// output, the object of all outputs otherwise, `Null` when there is
/// none.
pub fn collapse_outputs(outputs: InterfaceOutputs) -> Value {
    match outputs.len() {
        0 => Value::Null,
        1 => outputs
            .into_iter()
            .next()
            .map(|(_, v)| v)
            .unwrap_or_default(),
        _ => Value::Object(outputs),
    }
}
