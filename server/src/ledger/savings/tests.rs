use spotboard_core::CapacityType;
use spotboard_core::model::Lifetime;

use super::*;

/// An 8×H100 spot node that started `hours_ago` and still runs (priced by the shipped catalog).
fn running(uid: &str, hours_ago: i64) -> Lifetime {
    Lifetime {
        uid: uid.into(),
        cluster: "zone-a".into(),
        node: uid.into(),
        pool: Some("spot-a".into()),
        instance_type: Some("gd-8xh100ib-i128".into()),
        zone: Some("US-EAST-04A".into()),
        capacity_type: CapacityType::Spot,
        gpus: 8,
        started_at: Utc::now() - chrono::Duration::hours(hours_ago),
        ..Default::default()
    }
}

async fn savings(fresh_for: Duration) -> Savings {
    let ledger = Ledger::open("sqlite::memory:").await.unwrap();
    let mut s = Savings::new(ledger, Arc::new(PriceCatalog::shipped()));
    s.fresh_for = fresh_for;
    s
}

async fn headline(s: &Savings, range: &str) -> SavingsHeadline {
    let (from, to) =
        spotboard_core::domain::savings::range::resolve(Some(range), None, None, Utc::now())
            .expect("a named range");
    s.headline(range, from, to).await.unwrap()
}

#[tokio::test]
async fn tabs_asking_within_the_freshness_share_one_headline() {
    let s = savings(Duration::from_secs(60)).await;
    s.ledger.started(&running("n1", 2)).await.unwrap();
    let first = headline(&s, "24h").await;
    assert_eq!(first.run_rate.running_nodes, 1);
    assert!(first.savings_usd > rust_decimal::Decimal::ZERO, "{first:?}");

    s.ledger.started(&running("n2", 2)).await.unwrap();
    assert_eq!(
        headline(&s, "24h").await,
        first,
        "the same headline while fresh"
    );
    // Each named range is its own entry: this one is made now and sees the second node.
    assert_eq!(headline(&s, "1h").await.run_rate.running_nodes, 2);
}

#[tokio::test]
async fn a_stale_headline_is_made_again_from_the_ledger() {
    let s = savings(Duration::from_millis(50)).await;
    s.ledger.started(&running("n1", 2)).await.unwrap();
    assert_eq!(headline(&s, "24h").await.run_rate.running_nodes, 1);
    s.ledger.started(&running("n2", 2)).await.unwrap();
    tokio::time::sleep(Duration::from_millis(80)).await;
    assert_eq!(headline(&s, "24h").await.run_rate.running_nodes, 2);
}
