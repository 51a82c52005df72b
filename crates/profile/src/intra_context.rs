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

    /// Adds `other`'s counts (a profile of the same module).
    pub fn add(&mut self, other: &IntraContextProfile) -> Result<(), String> {
        if self.functions.len() != other.functions.len() {
            return Err("the intra-context profiles instrument different functions".into());
        }
        for (mine, theirs) in self.functions.iter_mut().zip(&other.functions) {
            if (mine.func_index, mine.potential) != (theirs.func_index, theirs.potential) {
                return Err(format!(
                    "the intra-context numberings of function {} differ",
                    mine.func_index
                ));
            }
            crate::merge::add_counted(
                &mut mine.paths,
                &theirs.paths,
                |p| p.number,
                |p| &mut p.count,
                "path",
            )?;
        }
        self.lost = self.lost.saturating_add(other.lost);
        Ok(())
    }
}
