//! What a user of the session crate matches on: each way a real call fails
//! gives its own variant of `pathprof_session::Error`.

use pathprof_session::Error;

#[test]
fn bytes_that_are_not_a_module_are_a_module_error() {
    let engine = pathprof_runner::engine_without_fuel().unwrap();
    let e = match pathprof_session::segments::Prepared::new(&engine, b"not wasm") {
        Ok(_) => panic!("prepared garbage"),
        Err(e) => e,
    };
    assert!(e.wasm().is_some(), "{e:?}");
    assert!(matches!(e.root(), Error::Wasm(_)), "{e:?}");
}

#[test]
fn a_configuration_the_simulator_refuses_is_a_simulator_error() {
    let module = wat::parse_str(r#"(module (func (export "_start")))"#).unwrap();
    let mut config = pathprof_simulator::SimConfig::default();
    config.max_path_len = 0;
    let e = match pathprof_session::simulate::simulate(
        &module,
        pathprof_runner::RunOptions::default(),
        vec![config],
        1,
    ) {
        Ok(_) => panic!("simulated a path length of 0"),
        Err(e) => e,
    };
    assert!(
        matches!(
            e.root(),
            Error::Sim(pathprof_simulator::SimError::Config {
                what: "max_path_len",
                ..
            })
        ),
        "{e:?}"
    );
}

#[test]
fn context_is_kept_and_root_looks_through_it() {
    let e = Error::Invalid("no such export".into()).context("running f.wasm");
    assert_eq!(e.to_string(), "running f.wasm");
    assert_eq!(format!("{e:#}"), "running f.wasm: no such export");
    assert!(matches!(e.root(), Error::Invalid(m) if m == "no such export"));
    assert!(e.core().is_none() && e.wasm().is_none());
}
