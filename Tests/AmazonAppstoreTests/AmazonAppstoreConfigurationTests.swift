import AmazonAppstore
import ReceiptCore
import Testing

/// Settings read from the environment, and the default rule for SNS certificate URLs.
@Suite struct AmazonAppstoreConfigurationTests {
    @Test func defaultsAndOverrides() throws {
        let defaults = try AmazonAppstoreConfiguration.fromEnvironment([:])
        #expect(defaults.rvsURL == "https://appstore-sdk.amazon.com")
        #expect(defaults.snsCertURLPattern == AmazonAppstoreConfiguration.defaultSNSCertURLPattern)
        let set = try AmazonAppstoreConfiguration.fromEnvironment([
            "RECEIPTGATE_AMAZON_RVS_URL": "http://127.0.0.1:9000/",
            "RECEIPTGATE_AMAZON_SNS_CERT_URL_PATTERN": #"https://certs\.example/[a-z]+\.pem"#,
        ])
        #expect(set.rvsURL == "http://127.0.0.1:9000")
        #expect(
            set.allowsSNSCertificateURL("https://certs.example/abc.pem")
                && !set.allowsSNSCertificateURL("https://certs.example/abc.pem.x"))
    }

    @Test(arguments: [
        ("RECEIPTGATE_AMAZON_RVS_URL", "ftp://appstore-sdk.amazon.com"),
        ("RECEIPTGATE_AMAZON_SNS_CERT_URL_PATTERN", "https://(unclosed"),
    ])
    func aBadValueStopsStartUpNamingTheVariable(variable: String, value: String) {
        #expect {
            _ = try AmazonAppstoreConfiguration.fromEnvironment([variable: value])
        } throws: { error in
            (error as? ConfigurationInvalid)?.variable == variable
        }
    }

    @Test func theDefaultRuleTakesAmazonsCertificateURLsOnly() {
        let rule = AmazonAppstoreConfiguration()
        #expect(
            rule.allowsSNSCertificateURL(
                "https://sns.us-east-1.amazonaws.com/SimpleNotificationService-a86cb10b4e1f29c941702d737128f7b6.pem"))
        #expect(rule.allowsSNSCertificateURL("https://sns.eu-west-1.amazonaws.com/SimpleNotificationService-01ab.pem"))
        #expect(
            rule.allowsSNSCertificateURL("https://sns.us-gov-west-1.amazonaws.com/SimpleNotificationService-01ab.pem"))
        #expect(
            rule.allowsSNSCertificateURL("https://sns.cn-north-1.amazonaws.com.cn/SimpleNotificationService-01ab.pem"))
        for foreign in [
            "http://sns.us-east-1.amazonaws.com/SimpleNotificationService-01ab.pem",
            "https://sns.us-east-1.amazonaws.com.evil.example/SimpleNotificationService-01ab.pem",
            "https://sns.us-east-1.amazonaws.com/SimpleNotificationService-01ab.pem/../x.pem",
            "https://sns.us-east-1.amazonaws.com/SimpleNotificationService-XYZ.pem",
            "https://sqs.us-east-1.amazonaws.com/SimpleNotificationService-01ab.pem",
            "https://sns.s3.amazonaws.com/SimpleNotificationService-01ab.pem",
            "https://sns.s3-external-1.amazonaws.com/SimpleNotificationService-01ab.pem",
            "https://sns.s3-website-us-east-1.amazonaws.com/SimpleNotificationService-01ab.pem",
            "https://sns.s3.amazonaws.com.cn/SimpleNotificationService-01ab.pem", "",
        ] {
            #expect(!rule.allowsSNSCertificateURL(foreign), "\(foreign)")
        }
    }
}
