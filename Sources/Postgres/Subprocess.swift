import Foundation

/// Runs a program to completion with posix_spawn and waitpid, its output captured in a temporary
/// file. Foundation's Process is avoided here: its exit monitoring was seen to miss the exit of
/// `pg_ctl start` (whose child, the server, lives on), hanging the caller forever.
enum Subprocess {
    struct Outcome {
        let status: Int32
        let output: String
    }

    static func run(_ executable: String, _ arguments: [String], environment: [String: String]) throws -> Outcome {
        let outputPath = NSTemporaryDirectory() + "receiptgate-subprocess-\(getpid())-\(UUID().uuidString)"
        defer { unlink(outputPath) }

        var actions = posix_spawn_file_actions_t()
        posix_spawn_file_actions_init(&actions)
        defer { posix_spawn_file_actions_destroy(&actions) }
        posix_spawn_file_actions_addopen(&actions, 0, "/dev/null", O_RDONLY, 0)
        posix_spawn_file_actions_addopen(&actions, 1, outputPath, O_WRONLY | O_CREAT | O_TRUNC, 0o600)
        posix_spawn_file_actions_adddup2(&actions, 1, 2)

        // `env -C /` starts the program in `/`: the postgres user may not be able to read our
        // working directory, and initdb/pg_ctl resolve it on start.
        let argv = (["/usr/bin/env", "-C", "/", executable] + arguments).map { strdup($0) } + [nil]
        let envp = environment.map { strdup("\($0.key)=\($0.value)") } + [nil]
        defer {
            argv.forEach { free($0) }
            envp.forEach { free($0) }
        }
        var pid: pid_t = 0
        let spawned = posix_spawn(&pid, "/usr/bin/env", &actions, nil, argv, envp)
        guard spawned == 0 else {
            throw PostgresError(.clusterFailed, "cannot start \(executable): \(String(cString: strerror(spawned)))")
        }
        var status: Int32 = 0
        while waitpid(pid, &status, 0) < 0 {
            guard errno == EINTR else { throw PostgresError(.clusterFailed, "waitpid failed for \(executable)") }
        }
        // WIFEXITED / WEXITSTATUS are macros; decode the wait status by hand.
        let exitCode: Int32 = (status & 0x7f) == 0 ? (status >> 8) & 0xff : 128 + (status & 0x7f)
        let output = (try? String(contentsOfFile: outputPath, encoding: .utf8)) ?? ""
        return Outcome(status: exitCode, output: output)
    }
}
