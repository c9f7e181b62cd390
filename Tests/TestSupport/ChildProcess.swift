package import Foundation

/// A program started by a test, with stdout and stderr captured in files (posix_spawn and
/// waitpid, not Foundation's Process, whose exit monitoring was seen to hang here).
package final class ChildProcess: @unchecked Sendable {
    package let pid: pid_t
    private let stdoutPath: String
    private let stderrPath: String
    private let exitStatus = LockedBox<Int32?>(nil)

    package static func launch(
        _ executable: String, _ arguments: [String], environment: [String: String]
    ) throws -> ChildProcess {
        let base = NSTemporaryDirectory() + "rg-child-\(getpid())-\(UUID().uuidString.prefix(8))"
        let stdoutPath = base + ".out", stderrPath = base + ".err"
        var actions = posix_spawn_file_actions_t()
        posix_spawn_file_actions_init(&actions)
        defer { posix_spawn_file_actions_destroy(&actions) }
        posix_spawn_file_actions_addopen(&actions, 0, "/dev/null", O_RDONLY, 0)
        posix_spawn_file_actions_addopen(&actions, 1, stdoutPath, O_WRONLY | O_CREAT | O_TRUNC, 0o600)
        posix_spawn_file_actions_addopen(&actions, 2, stderrPath, O_WRONLY | O_CREAT | O_TRUNC, 0o600)
        let argv = ([executable] + arguments).map { strdup($0) } + [nil]
        let envp = environment.map { strdup("\($0.key)=\($0.value)") } + [nil]
        defer { argv.forEach { free($0) }; envp.forEach { free($0) } }
        var pid: pid_t = 0
        let result = posix_spawn(&pid, executable, &actions, nil, argv, envp)
        guard result == 0 else { throw RawHTTP.Failure(description: "cannot start \(executable): errno \(result)") }
        return ChildProcess(pid: pid, stdoutPath: stdoutPath, stderrPath: stderrPath)
    }

    /// Runs to completion on the calling thread (for synchronous test helpers: a short program
    /// such as `openssl`), with posix_spawn and waitpid. Returns (exit status, stdout, stderr).
    @discardableResult
    package static func runBlocking(
        _ executable: String, _ arguments: [String],
        environment: [String: String] = ["PATH": "/usr/bin:/bin"]
    ) throws -> (status: Int32, stdout: String, stderr: String) {
        let child = try launch(executable, arguments, environment: environment)
        var raw: Int32 = 0
        while waitpid(child.pid, &raw, 0) < 0 && errno == EINTR {}
        let status = (raw & 0x7f) == 0 ? (raw >> 8) & 0xff : 128 + (raw & 0x7f)
        child.exitStatus.set(status)
        return (status, child.stdout, child.stderr)
    }

    /// Runs to completion and returns (exit status, stdout, stderr).
    package static func run(
        _ executable: String, _ arguments: [String], environment: [String: String],
        timeout: Duration = .seconds(120)
    ) async throws -> (status: Int32, stdout: String, stderr: String) {
        let child = try launch(executable, arguments, environment: environment)
        let status = try await child.wait(timeout: timeout)
        return (status, child.stdout, child.stderr)
    }

    private init(pid: pid_t, stdoutPath: String, stderrPath: String) {
        self.pid = pid
        self.stdoutPath = stdoutPath
        self.stderrPath = stderrPath
    }

    deinit {
        if exitStatus.get() == nil { kill(pid, SIGKILL); var status: Int32 = 0; waitpid(pid, &status, 0) }
        unlink(stdoutPath)
        unlink(stderrPath)
    }

    package var stdout: String { (try? String(contentsOfFile: stdoutPath, encoding: .utf8)) ?? "" }
    package var stderr: String { (try? String(contentsOfFile: stderrPath, encoding: .utf8)) ?? "" }

    package func send(_ signal: Int32) { kill(pid, signal) }

    /// Waits for exit on a thread of its own; kills the process if `timeout` passes.
    package func wait(timeout: Duration) async throws -> Int32 {
        if let status = exitStatus.get() { return status }
        let pid = self.pid
        let timer = Task {
            try await Task.sleep(for: timeout)
            kill(pid, SIGKILL)
        }
        defer { timer.cancel() }
        let status: Int32 = await withCheckedContinuation { continuation in
            Thread {
                var raw: Int32 = 0
                while waitpid(pid, &raw, 0) < 0 && errno == EINTR {}
                continuation.resume(returning: (raw & 0x7f) == 0 ? (raw >> 8) & 0xff : 128 + (raw & 0x7f))
            }.start()
        }
        exitStatus.set(status)
        return status
    }

    /// Polls stderr until a line contains `text`; returns that line. The default bound is for a
    /// process starting while the whole suite runs beside it on two cores, where a start (its
    /// migrations committed one by one) has taken over a minute.
    package func waitForStderrLine(containing text: String, timeout: Duration = .seconds(240)) async throws -> String {
        let deadline = ContinuousClock.now + timeout
        while ContinuousClock.now < deadline {
            if let line = stderr.split(separator: "\n").first(where: { $0.contains(text) }) { return String(line) }
            var raw: Int32 = 0
            if waitpid(pid, &raw, WNOHANG) == pid {
                exitStatus.set((raw & 0x7f) == 0 ? (raw >> 8) & 0xff : 128 + (raw & 0x7f))
                throw RawHTTP.Failure(
                    description: "process exited before logging \"\(text)\"; stderr: \(stderr.suffix(2000))")
            }
            try await Task.sleep(for: .milliseconds(50))
        }
        throw RawHTTP.Failure(
            description: "no stderr line containing \"\(text)\" within the timeout; stderr: \(stderr.suffix(2000))")
    }
}
