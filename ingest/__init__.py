"""Bringing recorded traffic in from files: mitmproxy flow files and HAR (`ctxtap import`)."""
