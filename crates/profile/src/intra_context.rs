//! The intraprocedural context paths of a profile (`intra-context` mode,
//! Melski & Reps, TR 1382, section 7): per function, the paths counted,
//! each decoded to its steps, its context-prefix apart from its
//! active-suffix.

use pathprof_graph::intra_context::ContextPath;
use serde::{Deserialize, Serialize};

#[derive(Clone, Debug, Default, PartialEq, Serialize, Deserialize)]
pub struct IntraContextProfile {
    /// Per instrumented function, in function order.
    pub functions: Vec<FunctionContextPaths>,
    /// Counts a full hash table dropped.
    pub lost: u64,
}

#[derive(Clone, Debug, PartialEq, Serialize, Deserialize)]
pub struct FunctionContextPaths {
    /// Index in the module's function index space (imports counted).
    pub func_index: u32,
    /// The number of paths of the transformed CFG (every path number is
    /// below it).
    pub potential: u64,
    /// The counted paths, by path number.
    pub paths: Vec<ContextPathCount>,
}

#[derive(Clone, Debug, PartialEq, Eq, Serialize, Deserialize)]
pub struct ContextPathCount {
    pub number: u64,
    pub count: u64,
    pub path: ContextPath,
}

impl IntraContextProfile {
    /// The paths of function `func_index`, if it was instrumented.
    pub fn function(&self, func_index: u32) -> Option<&FunctionContextPaths> {
        self.functions.iter().find(|f| f.func_index == func_index)
    }

    /// Adds `other`'s counts (a profile of the same module), joined by
    /// function index: a sparse profile lists only the functions with paths
    /// (the profiles' `functions` and `unrun` say that both instrument the
    /// same ones).
    pub fn add(&mut self, other: &IntraContextProfile) -> Result<(), String> {
        let mut mine: std::collections::BTreeMap<u32, FunctionContextPaths> =
            std::mem::take(&mut self.functions)
                .into_iter()
                .map(|f| (f.func_index, f))
                .collect();
        for theirs in &other.functions {
            let Some(m) = mine.get_mut(&theirs.func_index) else {
                mine.insert(theirs.func_index, theirs.clone());
                continue;
            };
            if m.potential != theirs.potential {
                return Err(format!(
                    "the intra-context numberings of function {} differ",
                    m.func_index
                ));
            }
            crate::merge::add_counted(
                &mut m.paths,
                &theirs.paths,
                |p| p.number,
                |p| &mut p.count,
                "path",
            )?;
        }
        self.functions = mine.into_values().collect();
        self.lost = self.lost.saturating_add(other.lost);
        Ok(())
    }
}
