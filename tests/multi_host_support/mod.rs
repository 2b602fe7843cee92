//! Helpers of `tests/multi_host.rs`: the image built from this test's binary, and one
//! `deploy/compose.yaml` project per test (its certificates, token, spec and runs directory in a
//! tempdir), driven through `docker` and `docker-compose` and torn down on drop.
#![allow(dead_code, clippy::unwrap_used, clippy::expect_used)]

pub mod faults;
pub mod security;

use std::path::{Path, PathBuf};
use std::process::{Command, Output, Stdio};
use std::time::{Duration, Instant};

/// The registry-free base image `deploy/docker/build-base.sh` makes (`.ci/run` builds it).
pub const BASE_IMAGE: &str = "openbench-base:bookworm";
/// The repository of the image this test builds from its own binary; the tag is the test
/// process's id, so concurrent runs on one engine never swap each other's binary.
pub const TEST_IMAGE: &str = "openbench-inference";
/// The bearer token of the test deployment.
pub const TOKEN: &str = "obt-multi-host-token-5d1e";

/// The repository root.
pub fn repo() -> PathBuf {
    PathBuf::from(env!("CARGO_MANIFEST_DIR"))
}

/// Why the multi-host test cannot run here, or `None` when docker, docker-compose and the base
/// image are all present.
pub fn missing_tools() -> Option<String> {
    let ok = |program: &str, args: &[&str]| {
        Command::new(program)
            .args(args)
            .stdout(Stdio::null())
            .stderr(Stdio::null())
            .status()
            .is_ok_and(|s| s.success())
    };
    if !ok("docker", &["info"]) {
        return Some("no Docker engine answers `docker info`".into());
    }
    if !ok("docker-compose", &["version"]) {
        return Some("docker-compose is not installed".into());
    }
    if !ok("docker", &["image", "inspect", BASE_IMAGE]) {
        return Some(format!(
            "the base image {BASE_IMAGE} is missing (bash deploy/docker/build-base.sh)"
        ));
    }
    None
}

/// Runs `program args`, panicking with its output when it fails.
pub fn must(program: &str, args: &[&str]) -> Output {
    succeeded(
        Command::new(program).args(args),
        &format!("{program} {args:?}"),
    )
}

/// Runs `command` to completion; its output, or a panic naming `what` with the output.
fn succeeded(command: &mut Command, what: &str) -> Output {
    let out = command
        .output()
        .unwrap_or_else(|e| panic!("cannot start {what}: {e}"));
    assert!(
        out.status.success(),
        "{what} failed: {}{}",
        String::from_utf8_lossy(&out.stdout),
        String::from_utf8_lossy(&out.stderr)
    );
    out
}

/// The image built for this test process; removed on drop (its base layers stay cached).
pub struct TestImage {
    /// `openbench-inference:multi-host-PID`.
    pub tag: String,
    /// How long the build took.
    pub took: Duration,
    /// Its size in bytes, as `docker image inspect` reports it.
    pub size: u64,
}

impl Drop for TestImage {
    fn drop(&mut self) {
        if std::env::var_os(KEEP_ENV).is_none() {
            let _ = Command::new("docker")
                .args(["image", "rm", "-f", &self.tag])
                .output();
        }
    }
}

/// Builds the test's image with the Dockerfile's `prebuilt` target from this test's binary
/// (stripped), the dataset release and the bundled specs, in a context of only those files.
pub fn build_image(binary: &Path) -> TestImage {
    let started = Instant::now();
    let tag = format!("{TEST_IMAGE}:multi-host-{}", std::process::id());
    let context = tempfile::tempdir().unwrap();
    let c = context.path();
    std::fs::create_dir_all(c.join("bin")).unwrap();
    let copied = c.join("bin/openbench-inference");
    std::fs::copy(binary, &copied).unwrap();
    // Stripping shrinks the debug build's layer several times; an unstripped copy also works.
    let _ = Command::new("strip").arg(&copied).status();
    let specs = "workflows/micro-single-task/specs";
    std::fs::create_dir_all(c.join(specs)).unwrap();
    copy_dir(&repo().join(specs), &c.join(specs));
    copy_dir(&repo().join("data"), &c.join("data"));
    let dockerfile = repo().join("deploy/docker/Dockerfile");
    must(
        "docker",
        &[
            "build",
            "-q",
            "-f",
            dockerfile.to_str().unwrap(),
            "--target",
            "prebuilt",
            "--build-arg",
            &format!("BASE_IMAGE={BASE_IMAGE}"),
            "--build-arg",
            "BINARY=bin/openbench-inference",
            "-t",
            &tag,
            c.to_str().unwrap(),
        ],
    );
    let took = started.elapsed();
    let size = must("docker", &["image", "inspect", "-f", "{{.Size}}", &tag]);
    let size = String::from_utf8_lossy(&size.stdout)
        .trim()
        .parse()
        .unwrap();
    TestImage { tag, took, size }
}

fn copy_dir(from: &Path, to: &Path) {
    std::fs::create_dir_all(to).unwrap();
    for entry in std::fs::read_dir(from).unwrap() {
        let entry = entry.unwrap();
        let target = to.join(entry.file_name());
        if entry.file_type().unwrap().is_dir() {
            copy_dir(&entry.path(), &target);
        } else {
            std::fs::copy(entry.path(), target).unwrap();
        }
    }
}

/// One compose project of `deploy/compose.yaml` (or `deploy/compose.replicas.yaml`);
/// `docker-compose down` on drop.
pub struct Topology {
    /// Project name (unique per test process), the prefix of its containers and networks.
    pub project: String,
    /// Holds `pki/`, `runs/` and the spec the containers mount.
    pub dir: tempfile::TempDir,
    /// The variables the compose file reads (delays, paths, image).
    env: Vec<(String, String)>,
    /// The compose file, relative to the repository (`deploy/compose.yaml`).
    file: &'static str,
    /// Each long-running service and the log line that says it is ready.
    ready: &'static [(&'static str, &'static str)],
}

/// The services of `deploy/compose.yaml` and their ready lines.
const TWO_REGIONS_READY: &[(&str, &str)] = &[
    ("sim", "simulator listening"),
    ("sim-west", "relay listening"),
    ("link-east", "relay listening"),
    ("link-west", "relay listening"),
    ("probe-east", "probe: region east serving"),
    ("probe-west", "probe: region west serving"),
];

/// The services of `deploy/compose.replicas.yaml` and their ready lines.
const REPLICAS_READY: &[(&str, &str)] = &[
    ("sim", "simulator listening"),
    ("probe-0", "probe: region eu serving"),
    ("probe-1", "probe: region eu serving"),
    ("probe-2", "probe: region eu serving"),
];

impl Topology {
    /// Certificates for `probe-east` and `probe-west` (deploy/certs.sh), the token, a runs
    /// directory the containers' user can write, and `spec` as the mounted spec.
    pub fn new(image: &TestImage, spec: &str) -> Topology {
        let certs = ["east=probe-east", "west=probe-west"];
        Topology::of_file(
            image,
            spec,
            "deploy/compose.yaml",
            &certs,
            TWO_REGIONS_READY,
        )
    }

    /// `deploy/compose.replicas.yaml`: three probe replicas of region `eu` (certificates for
    /// `probe-0`, `probe-1`, `probe-2`), with `spec` mounted.
    pub fn replicas(image: &TestImage, spec: &str) -> Topology {
        let certs = ["r0=probe-0", "r1=probe-1", "r2=probe-2"];
        let file = "deploy/compose.replicas.yaml";
        Topology::of_file(image, spec, file, &certs, REPLICAS_READY)
    }

    fn of_file(
        image: &TestImage,
        spec: &str,
        file: &'static str,
        certs: &[&str],
        ready: &'static [(&'static str, &'static str)],
    ) -> Topology {
        let dir = tempfile::tempdir().unwrap();
        let d = dir.path();
        let pki = d.join("pki");
        let script = repo().join("deploy/certs.sh");
        let mut args = vec![script.to_str().unwrap(), pki.to_str().unwrap()];
        args.extend_from_slice(certs);
        must("bash", &args);
        std::fs::write(pki.join("probe-token"), TOKEN).unwrap();
        let runs = d.join("runs");
        std::fs::create_dir_all(&runs).unwrap();
        // The containers run as uid 10001: they read the keys and write the runs (a tempdir
        // only this test uses).
        must("chmod", &["-R", "a+rX", pki.to_str().unwrap()]);
        must("chmod", &["0777", runs.to_str().unwrap()]);
        let topology = Topology {
            project: format!("obmh{}{}", ready.len(), std::process::id()),
            env: vec![
                ("OPENBENCH_IMAGE".into(), image.tag.clone()),
                ("OPENBENCH_PKI".into(), pki.display().to_string()),
                ("OPENBENCH_RUNS".into(), runs.display().to_string()),
            ],
            dir,
            file,
            ready,
        };
        topology.set_spec(spec);
        topology
    }

    /// Writes `spec` as the spec every container mounts (takes effect on the next `up`).
    pub fn set_spec(&self, spec: &str) {
        std::fs::write(self.path("spec.yaml"), spec).unwrap();
    }

    /// A path inside the project's tempdir.
    pub fn path(&self, name: &str) -> PathBuf {
        self.dir.path().join(name)
    }

    /// Sets a compose variable (e.g. a relay delay) for the next commands.
    pub fn set(&mut self, name: &str, value: &str) {
        self.env.retain(|(k, _)| k != name);
        self.env.push((name.into(), value.into()));
    }

    /// `docker-compose -p PROJECT -f deploy/compose.yaml ARGS` with the project's variables.
    pub fn compose(&self, args: &[&str]) -> Command {
        let mut command = Command::new("docker-compose");
        command
            .arg("-p")
            .arg(&self.project)
            .arg("-f")
            .arg(repo().join(self.file))
            .args(args)
            .env("OPENBENCH_SPEC", self.path("spec.yaml"));
        for (k, v) in &self.env {
            command.env(k, v);
        }
        command
    }

    /// Runs a compose command to completion, panicking when it fails.
    pub fn must(&self, args: &[&str]) -> Output {
        succeeded(&mut self.compose(args), &format!("docker-compose {args:?}"))
    }

    /// Starts (or recreates, when its variables changed) every long-running service and waits
    /// until each has printed its ready line.
    pub fn up(&self) {
        self.must(&["up", "-d", "--remove-orphans"]);
        for (service, ready) in self.ready {
            self.wait_for_log(service, ready, 1);
        }
    }

    /// The service's log (stdout and stderr of every container it had).
    pub fn logs(&self, service: &str) -> String {
        let out = self
            .compose(&["logs", "--no-color", service])
            .output()
            .unwrap();
        String::from_utf8_lossy(&out.stdout).to_string() + &String::from_utf8_lossy(&out.stderr)
    }

    /// Waits (up to 120 s, for a loaded machine) until `needle` appears `times` times in the
    /// current container's log of `service`.
    pub fn wait_for_log(&self, service: &str, needle: &str, times: usize) {
        let id = self.container(service);
        let started = Instant::now();
        loop {
            let out = Command::new("docker").args(["logs", &id]).output().unwrap();
            let text = String::from_utf8_lossy(&out.stdout).to_string()
                + &String::from_utf8_lossy(&out.stderr);
            if text.matches(needle).count() >= times {
                return;
            }
            assert!(
                started.elapsed() < Duration::from_secs(120),
                "{service} did not print {needle:?} ×{times} within 120 s:\n{text}"
            );
            std::thread::sleep(Duration::from_millis(200));
        }
    }

    /// The container id of `service` (also a stopped or killed one).
    pub fn container(&self, service: &str) -> String {
        let out = self.must(&["ps", "-a", "-q", service]);
        let id = String::from_utf8_lossy(&out.stdout).trim().to_string();
        assert!(!id.is_empty(), "no container for {service}");
        id
    }

    /// The full name of one of the project's networks.
    pub fn network(&self, name: &str) -> String {
        format!("{}_{name}", self.project)
    }

    /// The address of `service` on network `name`.
    pub fn ip(&self, service: &str, name: &str) -> String {
        let format = format!(
            "{{{{(index .NetworkSettings.Networks \"{}\").IPAddress}}}}",
            self.network(name)
        );
        let out = must(
            "docker",
            &["inspect", "-f", &format, &self.container(service)],
        );
        String::from_utf8_lossy(&out.stdout).trim().to_string()
    }

    /// `docker-compose run` of the coordinator with `args` (the service's command without them).
    pub fn coordinator(&self, args: &[&str]) -> Command {
        let mut all = vec!["run", "--rm", "-T", "coordinator"];
        all.extend_from_slice(args);
        self.compose(&all)
    }

    /// The host path of a run directory the coordinator printed as `/work/runs/…`.
    pub fn run_dir(&self, stdout: &[u8]) -> PathBuf {
        let printed = crate::coordinator_support::printed_run_dir(stdout);
        let relative = printed
            .strip_prefix("/work/runs")
            .unwrap_or_else(|_| panic!("run directory outside /work/runs: {printed:?}"));
        self.path("runs").join(relative)
    }
}

/// Set: a finished or failed test leaves its containers and tempdir for inspection.
pub const KEEP_ENV: &str = "OPENBENCH_KEEP_TOPOLOGY";

impl Drop for Topology {
    fn drop(&mut self) {
        if std::env::var_os(KEEP_ENV).is_some() {
            let dir = std::mem::replace(&mut self.dir, tempfile::tempdir().unwrap()).keep();
            eprintln!(
                "{KEEP_ENV}: kept project {} and {}",
                self.project,
                dir.display()
            );
            return;
        }
        let _ = self
            .compose(&["down", "-v", "--remove-orphans", "-t", "2"])
            .stdout(Stdio::null())
            .stderr(Stdio::null())
            .status();
        // The containers wrote the runs as uid 10001; the tempdir removes them as root or owner.
    }
}
