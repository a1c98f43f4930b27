"""What people read: the HTML report (`reports.html`) and publishable attachments (`reports.publish`)."""
