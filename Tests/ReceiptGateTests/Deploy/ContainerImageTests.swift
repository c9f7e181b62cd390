import Foundation
import TestSupport
import Testing

/// The image Deploy/build-image.sh makes, run the way the README says: it serves a verified
/// purchase from a PostgreSQL on the host, as a non-root user, and its HEALTHCHECK passes.
@Suite(.serialized) struct ContainerImage {
    static let root = DeploymentArtifacts.deploy.deletingLastPathComponent()

    static let podmanInstalled: Bool = {
        let installed = FileManager.default.isExecutableFile(atPath: "/usr/bin/podman")
        if !installed { print("ContainerImage skipped: podman is not installed (scripts/setup.sh installs it)") }
        return installed
    }()

    /// What the sandbox here needs: no raising of limits, so they are given explicitly.
    static let limits = ["--ulimit", "nofile=4096:4096", "--ulimit", "nproc=4096:4096"]

    static func podman(
        _ arguments: [String], timeout: Duration = .seconds(120)
    ) async throws -> (status: Int32, stdout: String, stderr: String) {
        try await ChildProcess.run(
            "/usr/bin/podman", arguments, environment: ["PATH": "/usr/sbin:/usr/bin:/sbin:/bin", "HOME": "/root"],
            timeout: timeout)
    }

    @Test(.enabled(if: podmanInstalled, "podman is not installed"), .timeLimit(.minutes(15)))
    func builtImageServesAVerifiedPurchase() async throws {
        let release = Self.root.appendingPathComponent(".build/release/receiptgate").path
        try #require(
            FileManager.default.isExecutableFile(atPath: release), "scripts/test.sh builds the release binary first")
        let build = try await ChildProcess.run(
            Self.root.appendingPathComponent("Deploy/build-image.sh").path, [],
            environment: [
                "PATH": ProcessInfo.processInfo.environment["PATH"] ?? "/usr/bin:/bin",
                "RECEIPTGATE_IMAGE_SKIP_BUILD": "1", "HOME": "/root",
            ],
            timeout: .seconds(600))
        if build.status != 0, let free = Self.freeBytes(), free < 3 << 30 {
            // mmdebstrap needs room for a Debian root; a machine that has none left cannot build
            // any image, whatever the script says. That is the machine, not the image.
            print("ContainerImage skipped: \(free >> 20) MiB free for the image build: \(build.stderr.suffix(300))")
            try Test.cancel(Comment(rawValue: "too little free space to build an image on this machine"))
        }
        try #require(build.status == 0, "\(build.stderr.suffix(2000))")
        print("ContainerImage: \(build.stdout.split(separator: "\n").last ?? "")")
        try await Self.cancelUnlessContainersRun()
        let config = try await Self.podman([
            "image", "inspect", "--format", "{{.Config.User}}", "localhost/receiptgate:latest",
        ])
        #expect(config.stdout.trimmingCharacters(in: .whitespacesAndNewlines) == "receiptgate:receiptgate")

        let database = try await HostPostgres.start()
        defer { database.stop() }
        let pki = TestDatabase.temporaryDirectory("image-pki")
        let purchase = try await Binary.run(
            ["dev", "purchase", "--bundle-id", "com.example.image", "--product-id", "gems.100"],
            ["RECEIPTGATE_DATA_DIR": pki.path])
        try #require(purchase.status == 0, "\(purchase.stderr)")
        // The development PKI's folder is private to its owner; the container's user gets a readable copy of the root.
        let trust = TestDatabase.temporaryDirectory("image-trust")
        try FileManager.default.copyItem(atPath: pki.path + "/dev-pki/root.pem", toPath: trust.path + "/root.pem")
        try FileManager.default.setAttributes([.posixPermissions: 0o644], ofItemAtPath: trust.path + "/root.pem")
        let port = try RawHTTP.freePort(), name = "receiptgate-test-\(UUID().uuidString.prefix(8))"
        let run = try await Self.podman(
            ["run", "-d", "--name", name, "--runtime", "runc", "--network", "host"] + Self.limits + [
                "-e", "DATABASE_URL=\(database.url)", "-e", "RECEIPTGATE_PORT=\(port)",
                "-e",
                "RECEIPTGATE_MASTER_KEY=\(Data((0..<32).map { _ in UInt8.random(in: 0...255) }).base64EncodedString())",
                "-e", "RECEIPTGATE_APPLE_ROOT_CERTS=/run/dev-pki/root.pem", "-v", "\(trust.path):/run/dev-pki:ro",
                "localhost/receiptgate:latest",
            ])
        try #require(run.status == 0, "\(run.stderr)")
        defer { _ = try? ChildProcess.runBlocking("/usr/bin/podman", ["rm", "-f", name]) }
        try await Self.waitUntilReady(port: port, container: name)

        let created = try await Self.podman([
            "exec", name, "receiptgate", "client", "create", "--name", "image",
            "--bundle-id", "com.example.image", "--environments", "sandbox",
        ])
        try #require(created.status == 0, "\(created.stderr)")
        let client = try Binary.json(created.stdout)
        let signed = SignedClient(
            port: port, clientID: try #require(client["client_id"] as? String),
            secret: try #require(client["client_secret"] as? String))
        let answer = try await signed.post(
            "/v1/verify", json: ["store": "app_store", "receipt": purchase.stdout.trimmingCharacters(in: .newlines)])
        #expect(answer.status == 200, "\(answer.text)")
        #expect(try answer.json()["status"] as? String == "verified")
        let health = try await Self.podman(["healthcheck", "run", name])
        #expect(health.status == 0, "\(health.stdout)\(health.stderr)")
        let user = try await Self.podman(["exec", name, "id", "-u"])
        #expect(user.stdout.trimmingCharacters(in: .whitespacesAndNewlines) == "10001")
    }

    /// The least free space where the build writes: /tmp (mmdebstrap) and podman's storage.
    static func freeBytes() -> Int64? {
        ["/tmp", "/var/lib/containers", "/var/tmp"].compactMap { path in
            (try? FileManager.default.attributesOfFileSystem(forPath: path))?[.systemFreeSize] as? Int64
        }.min()
    }

    /// Podman inside some sandboxes cannot start any container (no mounts allowed): that is the
    /// machine, not the image, so the test stops there and says why.
    static func cancelUnlessContainersRun() async throws {
        let probe = try await podman(
            ["run", "--rm", "--runtime", "runc", "--network", "host"] + limits
                + ["--entrypoint", "/bin/true", "localhost/receiptgate:latest"])
        if probe.status != 0 && probe.stderr.contains("OCI runtime") {
            print("ContainerImage skipped: podman cannot run a container here: \(probe.stderr.prefix(300))")
            try Test.cancel(Comment(rawValue: "podman cannot run a container on this machine"))
        }
    }

    static func waitUntilReady(port: Int, container: String) async throws {
        let deadline = ContinuousClock.now + .seconds(60)
        while ContinuousClock.now < deadline {
            if let ready = try? await RawHTTP.request(port: port, path: "/readyz"), ready.status == 200 { return }
            try await Task.sleep(for: .milliseconds(200))
        }
        let logs = try await podman(["logs", container])
        Issue.record("the container was not ready within 60 s: \(logs.stdout.suffix(1500))\(logs.stderr.suffix(1500))")
        throw CancellationError()
    }
}
