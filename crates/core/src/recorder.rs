//! What every technique's instrumentation ends with: the metadata section
//! recorded function by function, and the instrumented module it is
//! appended to.

use std::fs::File;
use std::io::{Seek, SeekFrom, Write};

use crate::error::{bail, Context, Result};
use pathprof_wasm::{FunctionCfg, Unsupported};

use crate::meta::Reader;
use crate::meta::{Encoder, Meta, Spilled, META_SECTION};
use crate::options::Options;
use crate::technique::{Profiler, Recorded};
use pathprof_profile::{
    Block, Edge, FunctionData, FunctionProfile, Profile, Skipped, SourceLocation,
};

/// An instrumented module; its metadata section says how to decode its counters.
pub struct Instrumented {
    pub bytes: Vec<u8>,
    /// Functions left uninstrumented, as one-line warnings.
    pub warnings: Vec<String>,
    /// The metadata as planning made it, when
    /// [`Options::keep_meta`](crate::options::Options::keep_meta) asked.
    kept: Option<Meta>,
}

impl Instrumented {
    /// The decoded metadata section (the profile template is rebuilt).
    pub fn meta(&self) -> Result<Meta> {
        read_meta(&self.bytes)
    }

    /// The metadata kept while planning, if
    /// [`Options::keep_meta`](crate::options::Options::keep_meta) asked and
    /// the technique plans one function at a time: what
    /// [`Instrumented::meta`] decodes, without decoding it.
    pub fn take_kept_meta(&mut self) -> Option<Meta> {
        self.kept.take()
    }
}

impl Instrumented {
    /// Adds to the kept metadata (if any) what a technique planned whole
    /// keeps beside the function records.
    pub(crate) fn keep_also(&mut self, add: impl FnOnce(&mut Meta)) {
        if let Some(meta) = &mut self.kept {
            add(meta);
        }
    }
}

/// An instrumented module, returned or written.
pub(crate) enum Done {
    Memory(Instrumented),
    Written { warnings: Vec<String> },
}

/// Writes each function's record of the metadata section, in function
/// order, and collects the warnings of the functions left uninstrumented.
pub(crate) struct Recorder {
    meta: Encoder,
    sources: Option<crate::source::SourceMap>,
    warnings: Vec<String>,
    /// The profile template being built, when the metadata is kept
    /// ([`Recorder::keep_template`]).
    kept: Option<(&'static dyn Profiler, Profile)>,
}

impl Recorder {
    pub(crate) fn new(
        module_hash: &str,
        module: &[u8],
        technique: &dyn Profiler,
        opts: &Options,
    ) -> Result<Self> {
        if let Some(w) = &opts.weights {
            if w.module_hash != module_hash {
                bail!("the weights profile is of another module");
            }
        }
        let sources = crate::source::SourceMap::load(module);
        // Once per module, before any of the functions' warnings.
        let warnings = crate::source::lost_debug_info(module, sources.as_ref())
            .into_iter()
            .collect();
        Ok(Recorder {
            meta: Encoder::new(
                module_hash,
                technique.code(),
                opts.ball_larus.truncate_above,
            ),
            sources,
            warnings,
            kept: None,
        })
    }

    /// Builds the profile template beside the section, from the functions
    /// as [`Recorder::keep`] gives them: the metadata the section would
    /// decode to, without decoding it.
    pub(crate) fn keep_template(&mut self, technique: &'static dyn Profiler) {
        let template = Profile::new(self.meta.module_hash().to_string(), technique.mode());
        self.kept = Some((technique, template));
    }

    /// Adds a function to the kept template (nothing when none is kept):
    /// its blocks and edges as the section records them, and `data`, else
    /// what its technique reads back from `record`.
    pub(crate) fn keep(
        &mut self,
        f: &FunctionCfg,
        record: &[u8],
        data: Option<FunctionData>,
    ) -> Result<()> {
        let Some((technique, template)) = &mut self.kept else {
            return Ok(());
        };
        let blocks = template_blocks(f, self.sources.as_ref());
        let edges: Vec<Edge> = f
            .cfg
            .edge_list()
            .iter()
            .zip(&f.edge_kinds)
            .map(|(&(src, dst), kind)| Edge {
                src,
                dst,
                kind: format!("{kind:?}"),
            })
            .collect();
        let data = match data {
            Some(data) => data,
            None => {
                let recorded = Recorded {
                    func_index: f.func_index,
                    blocks: &blocks,
                    edges: &edges,
                    truncate_above: self.meta.truncate_above(),
                };
                technique.read_record(&mut Reader::new(record), &recorded)?
            }
        };
        template.functions.push(FunctionProfile {
            func_index: f.func_index,
            name: f.name.clone(),
            blocks,
            edges,
            data,
        });
        Ok(())
    }

    /// Writes a function's record of the metadata section: its CFG and
    /// what its plan chose (its technique's record), or that it was left
    /// uninstrumented.
    pub(crate) fn record(
        &mut self,
        slot: Result<(&FunctionCfg, &[u8]), &Unsupported>,
    ) -> Result<()> {
        match slot {
            Ok((cfg, record)) => self.meta.function(cfg, record, self.sources.as_ref())?,
            Err(u) => {
                if let Some((_, template)) = &mut self.kept {
                    template.skipped.push(Skipped {
                        func_index: u.func_index,
                        name: u.name.clone(),
                        reason: u.reason.clone(),
                    });
                }
                self.warnings.push(format!(
                    "{} left uninstrumented: {}",
                    display_name(u.func_index, &u.name),
                    u.reason
                ));
                self.meta.skipped(u);
            }
        }
        Ok(())
    }

    /// Sends the metadata records to a scratch file as they are written.
    pub(crate) fn spill_to(&mut self, file: File) {
        self.meta.spill_to(file);
    }

    /// Adds a warning (a function the technique leaves uninstrumented
    /// although the CFG builder models it).
    pub(crate) fn warn(&mut self, warning: String) {
        self.warnings.push(warning);
    }

    /// Records a function of a module every function of which has a plan
    /// of no technique-specific data (the interprocedural modes).
    pub(crate) fn record_cfg(&mut self, f: Result<&FunctionCfg, &Unsupported>) -> Result<()> {
        if let Ok(cfg) = f {
            self.keep(cfg, &[], None)?;
        }
        self.record(f.map(|cfg| (cfg, &[][..])))
    }

    /// For a technique planned whole: keeps the template when
    /// [`Options::keep_meta`] asks (its output is always in memory).
    pub(crate) fn keep_if_asked(&mut self, technique: &dyn Profiler, opts: &Options) {
        if let Some(t) = crate::technique::profiler_of(technique.code(), &[]) {
            if opts.keep_meta {
                self.keep_template(t);
            }
        }
    }

    /// What the header of the counter memory says, once every function is
    /// recorded; `extra` is what else decoding depends on.
    pub(crate) fn identity(&self, extra: &[u8]) -> Result<pathprof_wasm::CounterIdentity> {
        self.meta
            .identity(extra)
            .context("internal error: the module hash is not 64 hex digits")
    }

    /// Frees the debug information before the module is assembled.
    pub(crate) fn planned_all(&mut self) {
        self.sources = None;
    }

    /// The instrumented module with its metadata section appended.
    pub(crate) fn finish(self, out: pathprof_wasm::Instrumented) -> Instrumented {
        // Nothing was spilled: no scratch file is given on this path.
        let (section, _) = self.meta.finish(&out.layout, &out.code_map);
        let kept = self.kept.map(|(technique, template)| Meta {
            technique,
            template,
            layout: out.layout,
            code_map: out.code_map,
            interproc: None,
            ippp: None,
        });
        // Appended after everything, the section moves no code offset.
        let mut bytes = out.bytes;
        append_custom_section(&mut bytes, META_SECTION, &section);
        Instrumented {
            bytes,
            warnings: self.warnings,
            kept,
        }
    }

    /// Writes the metadata section after the module written to `out`.
    pub(crate) fn finish_into(
        self,
        written: pathprof_wasm::Written,
        out: &mut File,
    ) -> Result<Done> {
        let (section, spilled) = self.meta.finish(&written.layout, &written.code_map);
        drop(written);
        let spilled_len = spilled.as_ref().map_or(0, |s| s.len);
        let content = section_len(&section) + spilled_len as usize;
        out.write_all(&custom_section_head(META_SECTION, content))?;
        out.write_all(&section[0])?;
        if let Some(spilled) = spilled {
            copy_spilled(spilled, out)?;
        }
        out.write_all(&section[1])?;
        out.write_all(&section[2])?;
        Ok(Done::Written {
            warnings: self.warnings,
        })
    }
}

/// Instruments a module planned whole, every function of which has a plan
/// of no technique-specific data (the interprocedural modes): records
/// every CFG, then rewrites the module with `plans` and the module-level
/// `module_plan`, appending the custom section `section` (its name and
/// contents), which the counter memory's header covers.
pub(crate) fn instrument_whole(
    module: &[u8],
    info: &pathprof_wasm::ModuleInfo,
    technique: &dyn Profiler,
    opts: &Options,
    (module_plan, plans): (
        &pathprof_techniques::ModulePlan,
        &[Option<pathprof_techniques::FunctionPlan>],
    ),
    section: (&str, &[u8]),
) -> Result<Instrumented> {
    // Recorded first: the header of the counter memory covers the records
    // and the section.
    let mut rec = Recorder::new(&info.module_hash, module, technique, opts)?;
    rec.keep_if_asked(technique, opts);
    for f in &info.functions {
        rec.record_cfg(f.as_ref())?;
    }
    rec.planned_all();
    let out = pathprof_wasm::instrument_module(
        module,
        info,
        module_plan,
        plans,
        &[section],
        opts.output_check(),
        rec.identity(section.1)?,
    )?;
    Ok(rec.finish(out))
}

/// Appends a custom section whose contents are `parts`, one after the
/// other, to a complete module, growing it by exactly the section's size:
/// a module grown by doubling would hold up to twice its size, the largest
/// block of the instrumenter's peak memory.
fn append_custom_section(module: &mut Vec<u8>, name: &str, parts: &[Vec<u8>]) {
    let content = section_len(parts);
    let head = custom_section_head(name, content);
    module.reserve_exact(head.len() + content);
    module.extend_from_slice(&head);
    for part in parts {
        module.extend_from_slice(part);
    }
}

fn section_len(parts: &[Vec<u8>]) -> usize {
    parts.iter().map(Vec::len).sum()
}

/// Copies the metadata records spilled to a scratch file to `out`.
fn copy_spilled(mut spilled: Spilled, out: &mut File) -> Result<()> {
    spilled.file.seek(SeekFrom::Start(0))?;
    let copied = std::io::copy(&mut spilled.file, out)?;
    if copied != spilled.len {
        bail!("the scratch file of the metadata records was cut short");
    }
    Ok(())
}

/// What comes before the contents of a custom section named `name` whose
/// contents are `content` bytes: its id, size and name.
fn custom_section_head(name: &str, content: usize) -> Vec<u8> {
    use wasm_encoder::Encode;
    let mut head = vec![0]; // custom section id
    let mut name_bytes = Vec::new();
    name.encode(&mut name_bytes);
    let content = name_bytes.len() + content;
    content.encode(&mut head);
    head.extend_from_slice(&name_bytes);
    head
}

/// A function's blocks as the section records them.
fn template_blocks(
    f: &FunctionCfg,
    sources: Option<&crate::source::SourceMap>,
) -> Vec<Option<Block>> {
    f.blocks
        .iter()
        .map(|b| {
            let b = b.as_ref()?;
            let source = sources.and_then(|s| s.locate_parts(b.offset, b.end)).map(
                |(file, line, column)| SourceLocation {
                    file: file.to_string(),
                    line,
                    column,
                },
            );
            Some(Block {
                offset: b.offset,
                end: b.end,
                instrs: b.instrs,
                source,
            })
        })
        .collect()
}

pub(crate) fn display_name(func_index: u32, name: &Option<String>) -> String {
    name.clone()
        .unwrap_or_else(|| format!("func[{func_index}]"))
}

/// Reads the metadata section of an instrumented module and rebuilds the
/// profile template.
pub fn read_meta(instrumented: &[u8]) -> Result<Meta> {
    read_meta_with(instrumented, &[])
}

/// [`read_meta`] of a module that may have been instrumented for one of
/// the `foreign` techniques (defined outside pathprof).
pub fn read_meta_with(instrumented: &[u8], foreign: &[&'static dyn Profiler]) -> Result<Meta> {
    let mut meta = crate::meta::decode_with(&meta_section(instrumented)?, foreign)?;
    read_module_sections(&mut meta, instrumented)?;
    Ok(meta)
}

/// The bytes of the metadata section of an instrumented module.
pub(crate) fn meta_section(instrumented: &[u8]) -> Result<Vec<u8>> {
    Ok(pathprof_wasm::custom_section(instrumented, META_SECTION)?
        .ok_or(crate::meta::MetaError::Missing)?)
}

/// Adds to `meta` the sections of the techniques planned whole, if the
/// module has them.
pub(crate) fn read_module_sections(meta: &mut Meta, instrumented: &[u8]) -> Result<()> {
    meta.interproc = crate::meta::interproc::read_meta(instrumented)?;
    meta.ippp = crate::meta::ippp::read_meta(instrumented)?;
    Ok(())
}
