import Workers

extension Scrypt {
    /// `hashPassword` on a shared worker thread. One hash is 16 MiB and tens of milliseconds of
    /// CPU; on the cooperative pool (one thread per core) a burst of sign-ups or sign-ins would
    /// stall every other request of the process for as long.
    public static func hashPasswordOffThePool(
        _ password: String, parameters: Parameters = .passwords
    ) async throws -> String {
        try await SharedWorkers.computations.run { try hashPassword(password, parameters: parameters) }
    }

    /// `verifyPassword` on a shared worker thread (see `hashPasswordOffThePool`). False when
    /// the password does not match, and when it could not be checked.
    public static func verifyPasswordOffThePool(_ password: String, hash: String) async -> Bool {
        (try? await SharedWorkers.computations.run { verifyPassword(password, hash: hash) }) ?? false
    }
}
