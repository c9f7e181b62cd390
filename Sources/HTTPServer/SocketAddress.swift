import Foundation

/// An IPv4 or IPv6 socket address built from text.
struct SocketAddress {
    private var storage = sockaddr_storage()
    let isIPv6: Bool

    init(host: String, port: Int) throws {
        guard (0...65_535).contains(port) else {
            throw HTTPError(status: 500, code: "BIND_FAILED", message: "port \(port) is out of range")
        }
        if host.contains(":") {
            var address = sockaddr_in6()
            address.sin6_family = sa_family_t(AF_INET6)
            address.sin6_port = in_port_t(UInt16(port).bigEndian)
            guard inet_pton(AF_INET6, host, &address.sin6_addr) == 1 else {
                throw HTTPError(status: 500, code: "BIND_FAILED", message: "\(host) is not an IPv6 address")
            }
            withUnsafeMutableBytes(of: &storage) { $0.storeBytes(of: address, as: sockaddr_in6.self) }
            isIPv6 = true
        } else {
            var address = sockaddr_in()
            address.sin_family = sa_family_t(AF_INET)
            address.sin_port = in_port_t(UInt16(port).bigEndian)
            let text = host == "localhost" ? "127.0.0.1" : host
            guard inet_pton(AF_INET, text, &address.sin_addr) == 1 else {
                throw HTTPError(status: 500, code: "BIND_FAILED", message: "\(host) is not an IPv4 address")
            }
            withUnsafeMutableBytes(of: &storage) { $0.storeBytes(of: address, as: sockaddr_in.self) }
            isIPv6 = false
        }
    }

    mutating func withSockaddr<T>(_ body: (UnsafePointer<sockaddr>) -> T) -> T {
        withUnsafePointer(to: &storage) { pointer in
            pointer.withMemoryRebound(to: sockaddr.self, capacity: 1) { body($0) }
        }
    }
}
