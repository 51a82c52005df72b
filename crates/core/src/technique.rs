//! The techniques a module can be instrumented for: the one list that the
//! command line's modes, the metadata's technique code and the profile's
//! mode all come from.

/// What to instrument for.
#[derive(Copy, Clone, Debug, PartialEq, Eq)]
pub enum Technique {
    Path,
    Edge,
    /// Preferential path profiling, with the interesting paths and policy of
    /// [`Options::ppp`](crate::options::Options::ppp).
    Ppp,
    /// Test-only: every edge reports itself to the host
    /// ([`Options::trace_mode`](crate::options::Options::trace_mode) says how).
    Trace,
    /// Melski & Reps' interprocedural context paths ([`crate::interproc`]).
    Context,
    /// Melski & Reps' interprocedural piecewise paths.
    Piecewise,
    /// Melski & Reps' intraprocedural context paths, section 7
    /// ([`crate::intra_context`]).
    IntraContext,
    /// Interprocedural preferential path profiling of depth-k path
    /// segments ([`crate::ippp`]).
    Ippp,
}

impl Technique {
    /// The techniques a user can ask for, in the order the command line
    /// lists them (all but [`Technique::Trace`], the tests' oracle).
    pub const PUBLIC: [Technique; 7] = [
        Technique::Path,
        Technique::Edge,
        Technique::Ppp,
        Technique::Context,
        Technique::Piecewise,
        Technique::IntraContext,
        Technique::Ippp,
    ];

    /// Every technique: [`Technique::PUBLIC`], then the trace.
    pub fn all() -> impl Iterator<Item = Technique> {
        Technique::PUBLIC.into_iter().chain([Technique::Trace])
    }

    /// Its name as a mode of the command line (`--mode NAME`).
    pub fn name(self) -> &'static str {
        match self {
            Technique::Path => "path",
            Technique::Edge => "edge",
            Technique::Ppp => "ppp",
            Technique::Trace => "trace",
            Technique::Context => "context",
            Technique::Piecewise => "piecewise",
            Technique::IntraContext => "intra-context",
            Technique::Ippp => "ippp",
        }
    }

    /// What it counts, in a line (the command line's help of its mode).
    pub fn about(self) -> &'static str {
        match self {
            Technique::Path => "Ball-Larus path profiling",
            Technique::Edge => "Edge profiling (counters on spanning-tree chords)",
            Technique::Ppp => "Preferential path profiling of the paths named by --interesting",
            Technique::Trace => "Every edge reported to the host (the tests' oracle)",
            Technique::Context => "Interprocedural context paths (Melski & Reps): paths across calls, with the context they were reached in",
            Technique::Piecewise => "Interprocedural piecewise paths (Melski & Reps): paths across calls and returns that partition the run",
            Technique::IntraContext => "Intraprocedural context paths (Melski & Reps section 7): a loop iteration's path with the path that entered the loop",
            Technique::Ippp => "Interprocedural PPP (Vaswani 3.4): counts the depth-K path segments named by --interesting (a segment profile of a test run, `run --segments K`)",
        }
    }

    /// Whether a user asks for it (the trace is the tests' oracle).
    pub fn is_public(self) -> bool {
        self != Technique::Trace
    }

    /// The technique named `name` ([`Technique::name`]).
    pub fn from_name(name: &str) -> Option<Technique> {
        Technique::all().find(|t| t.name() == name)
    }

    /// Its code in an instrumented module's metadata and counter header
    /// (docs/profile-format.md): fixed, whatever the order above.
    pub fn code(self) -> u8 {
        match self {
            Technique::Path => 0,
            Technique::Edge => 1,
            Technique::Ppp => 2,
            Technique::Trace => 3,
            Technique::Context => 4,
            Technique::Piecewise => 5,
            Technique::IntraContext => 6,
            Technique::Ippp => 7,
        }
    }

    /// The technique of metadata code `code` ([`Technique::code`]).
    pub fn from_code(code: u8) -> Option<Technique> {
        Technique::all().find(|t| t.code() == code)
    }

    /// The mode of the profiles it gives (the trace gives path profiles: it
    /// is the oracle of Ball-Larus paths; interprocedural PPP gives
    /// segment profiles, as `run --segments` does).
    pub fn mode(self) -> pathprof_profile::Mode {
        use pathprof_profile::Mode;
        match self {
            Technique::Path | Technique::Trace => Mode::Path,
            Technique::Edge => Mode::Edge,
            Technique::Ppp => Mode::Ppp,
            Technique::Context => Mode::Context,
            Technique::Piecewise => Mode::Piecewise,
            Technique::IntraContext => Mode::IntraContext,
            Technique::Ippp => Mode::Segments,
        }
    }

    /// Whether the module is planned whole rather than one function at a
    /// time (the interprocedural modes, and the intra-context mode, whose
    /// functions are recorded as bare CFGs).
    pub(crate) fn planned_whole(self) -> bool {
        matches!(
            self,
            Technique::Context | Technique::Piecewise | Technique::IntraContext | Technique::Ippp
        )
    }
}

#[cfg(test)]
mod tests {
    use super::Technique;

    /// The codes are a file format's: docs/profile-format.md lists them
    /// (`0 path, 1 edge, ...`), and each must name the technique it lists.
    #[test]
    fn codes_are_the_documented_ones() {
        let doc = include_str!("../../../docs/profile-format.md");
        let at = doc
            .find("u8 technique ")
            .expect("the metadata's technique line");
        let listed: String = doc[at..].lines().take(2).collect::<Vec<_>>().join(" ");
        let mut seen = 0;
        for item in listed.split(',') {
            let words: Vec<&str> = item.split_whitespace().collect();
            let Some(i) = words.iter().position(|w| w.parse::<u8>().is_ok()) else {
                continue;
            };
            let code: u8 = words[i].parse().unwrap();
            let t = Technique::from_code(code).expect("a documented code");
            assert_eq!(t.name(), words[i + 1], "code {code}");
            assert_eq!(t.code(), code);
            seen += 1;
        }
        assert_eq!(seen, Technique::all().count(), "{listed}");
        assert_eq!(Technique::from_code(8), None);
    }

    #[test]
    fn every_technique_has_its_own_name() {
        let mut names: Vec<&str> = Technique::all().map(|t| t.name()).collect();
        names.sort_unstable();
        names.dedup();
        assert_eq!(names.len(), 8);
        for t in Technique::all() {
            assert_eq!(Technique::from_name(t.name()), Some(t));
        }
        assert_eq!(Technique::from_name("none"), None);
        assert!(!Technique::Trace.is_public());
        assert!(Technique::PUBLIC.iter().all(|t| t.is_public()));
    }
}
