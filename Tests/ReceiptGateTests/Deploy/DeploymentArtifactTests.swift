import Foundation
import TestSupport
import Testing

/// The files in Deploy/ that no build of ours runs: the Kubernetes manifests, the systemd unit and
/// the Dockerfile. Each is checked by the tool its users will run it with, and each check is shown
/// to refuse a broken copy, so a pass means the real file is sound.
@Suite struct DeploymentArtifacts {
    static let deploy = URL(fileURLWithPath: #filePath).deletingLastPathComponent()
        .appendingPathComponent("../../../Deploy").standardizedFileURL

    static var manifests: [String] {
        let folder = deploy.appendingPathComponent("kubernetes")
        let names = (try? FileManager.default.contentsOfDirectory(atPath: folder.path)) ?? []
        return names.filter { $0.hasSuffix(".yaml") }.sorted().map { folder.appendingPathComponent($0).path }
    }

    /// kubernetes-validate (PyPI), which scripts/test.sh installs beside the other checkers.
    static func kubernetesValidate(_ files: [String]) async throws -> (status: Int32, stdout: String, stderr: String) {
        let python = try #require(
            ProcessInfo.processInfo.environment["RECEIPTGATE_ORACLE_PYTHON"],
            "RECEIPTGATE_ORACLE_PYTHON is not set (scripts/test.sh installs kubernetes-validate into the oracle venv)")
        return try await ChildProcess.run(
            python, ["-m", "kubernetes_validate", "--strict", "--kubernetes-version", "1.31.0"] + files,
            environment: ["PATH": "/usr/bin:/bin", "HOME": "/tmp"])
    }

    @Test func kubernetesManifestsValidateStrictly() async throws {
        let kinds = try Self.manifests.map { try String(contentsOfFile: $0, encoding: .utf8) }.joined()
        for kind in ["Deployment", "Service", "PodDisruptionBudget", "HorizontalPodAutoscaler", "Job"] {
            #expect(kinds.contains("kind: \(kind)\n"), "Deploy/kubernetes has no \(kind)")
        }
        let result = try await Self.kubernetesValidate(Self.manifests)
        #expect(result.status == 0, "\(result.stdout)\(result.stderr)")
        #expect(result.stdout.components(separatedBy: " passed for resource ").count - 1 == 5, "\(result.stdout)")
    }

    @Test func strictValidationRefusesAFieldKubernetesDoesNotKnow() async throws {
        let copy = TestDatabase.temporaryDirectory("k8s").appendingPathComponent("deployment.yaml")
        let original = try String(
            contentsOfFile: Self.deploy.appendingPathComponent("kubernetes/deployment.yaml").path, encoding: .utf8)
        try original.replacingOccurrences(of: "readinessProbe:", with: "readynessProbe:").write(
            to: copy, atomically: true, encoding: .utf8)
        let result = try await Self.kubernetesValidate([copy.path])
        #expect(result.status != 0, "\(result.stdout)")
    }

    @Test func deploymentProbesSecretsAndUser() throws {
        let text = try String(
            contentsOfFile: Self.deploy.appendingPathComponent("kubernetes/deployment.yaml").path, encoding: .utf8)
        #expect(text.contains("readinessProbe:\n            httpGet: {path: /readyz"))
        #expect(text.contains("livenessProbe:\n            httpGet: {path: /healthz"))
        #expect(text.contains("runAsNonRoot: true"))
        for key in ["database-url", "master-key"] {
            #expect(text.contains("secretKeyRef: {name: receiptgate, key: \(key)}"))
        }
    }

    /// `systemd-analyze verify` exits 0 even for an unknown key, warning on stderr: silence is the pass.
    static func systemdVerify(_ unit: String) async throws -> (status: Int32, output: String) {
        let folder = TestDatabase.temporaryDirectory("systemd")
        let path = folder.appendingPathComponent("receiptgate.service").path
        // The unit's binary must exist for verify: point it at the one this build made.
        try unit.replacingOccurrences(of: "/usr/local/bin/receiptgate", with: Binary.path).write(
            toFile: path, atomically: true, encoding: .utf8)
        let result = try await ChildProcess.run(
            "/usr/bin/systemd-analyze", ["verify", path], environment: ["PATH": "/usr/bin:/bin"])
        return (result.status, result.stdout + result.stderr)
    }

    @Test func systemdUnitVerifiesWithoutAWarning() async throws {
        try #require(
            FileManager.default.isExecutableFile(atPath: "/usr/bin/systemd-analyze"),
            "scripts/setup.sh installs systemd")
        let unit = try String(
            contentsOfFile: Self.deploy.appendingPathComponent("receiptgate.service").path, encoding: .utf8)
        let sound = try await Self.systemdVerify(unit)
        #expect(sound.status == 0 && sound.output.isEmpty, "\(sound.output)")
        let broken = try await Self.systemdVerify(
            unit.replacingOccurrences(of: "ProtectHome=true", with: "ProtectHome=maybe"))
        #expect(!broken.output.isEmpty, "a unit with a bad value verified silently")
    }

    /// Users with Docker get the same image as build-image.sh makes: the toolchain the package
    /// needs, the one runtime package list, the same non-root user.
    @Test func dockerfileMatchesTheBuiltImage() throws {
        let dockerfile = try String(
            contentsOfFile: Self.deploy.appendingPathComponent("Dockerfile").path, encoding: .utf8)
        let script = try String(
            contentsOfFile: Self.deploy.appendingPathComponent("build-image.sh").path, encoding: .utf8)
        #expect(dockerfile.contains("FROM swift:6.3-bookworm AS build"))
        for file in [dockerfile, script] {
            #expect(file.contains("runtime-packages.txt"))
            #expect(file.contains("10001"))
            #expect(file.contains("--static-swift-stdlib"))
        }
        #expect(!dockerfile.contains("libssl3"), "the runtime packages are listed in Deploy/runtime-packages.txt only")
    }
}
